"""Principal and API-key use cases: create, read, list and disable principals; mint, list,
revoke keys.

They follow the rules of every IAM administration use case (``occ.controller.policy``);
disabling a principal or revoking a key is what could leave no administrator able to sign
in. A minted key's plaintext leaves only through the return value, once: it is never
audited, logged or stored. Agent-owned service principals are made with their Agent; they are
listed here but get no API keys. A change takes its command value (``CreatePrincipal``,
``DisablePrincipal``, ``MintApiKey``, ``RevokeApiKey``). Reads return
``occ.state.iam_policy.Principal`` and ``occ.state.api_keys.ApiKey`` values.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from occ.controller import admission, installation, listing, policy
from occ.foundation import errors, ids
from occ.state import api_keys, grants, iam_policy, keyset, user_sessions
from occ.state.db import Database


@dataclass(frozen=True, kw_only=True)
class NewApiKey:
    """A freshly minted key: ``key`` is shown to its owner once and then forgotten.

    Not the stored ``ApiKey``: it carries the one-time plaintext, which nothing stores.
    """

    id: str
    principal_id: str
    created_at: dt.datetime
    key: str = field(repr=False)


@dataclass(frozen=True, kw_only=True)
class CreatePrincipal:
    """A new human or service principal; a service principal may belong to a Namespace."""

    name: str
    kind: iam_policy.PrincipalKind
    namespace_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class DisablePrincipal:
    """Disabling a principal (and revoking its keys)."""

    principal_id: str


@dataclass(frozen=True, kw_only=True)
class MintApiKey:
    """A new API key for a principal."""

    principal_id: str


@dataclass(frozen=True, kw_only=True)
class RevokeApiKey:
    """Revoking one of a principal's API keys."""

    principal_id: str
    key_id: str


# -- principals ---------------------------------------------------------------------------------


def create_principal(db: Database, actor_id: str, command: CreatePrincipal) -> iam_policy.Principal:
    """Create a human or service principal; a service principal may belong to a Namespace.

    Raises:
        InvalidInput: a bad ``name`` or ``namespace_id`` (humans are never Namespace-scoped).
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the Namespace does not exist.
        Conflict: the Namespace is being deleted.
    """
    name = admission.name(command.name, ("name",))
    kind, namespace_id = command.kind, command.namespace_id
    policy.optional_id("namespace", namespace_id, ("namespace_id",))
    if namespace_id is not None and kind != iam_policy.PrincipalKind.SERVICE:
        raise errors.InvalidInput.at(
            ("namespace_id",), "only a service principal may belong to a Namespace"
        )
    request = {"name": name, "kind": kind, "namespaceId": namespace_id}
    return policy.administered_create(
        db,
        actor_id,
        "principal",
        request,
        lambda session: iam_policy.create_principal(
            session, name=name, kind=kind, namespace_id=namespace_id
        ),
    )


def get_principal(db: Database, actor_id: str, principal_id: str) -> iam_policy.Principal:
    """A principal, disabled or not.

    Raises:
        NotFound: no principal has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    return policy.administered_get(
        db, actor_id, "principal", principal_id, iam_policy.get_principal
    )


def list_principals(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING
) -> keyset.Page[iam_policy.Principal]:
    """Every principal (Agent-owned service principals included) in creation order, the page
    ``window`` asks for."""
    return policy.administered_page(
        db, actor_id, "principals.list", iam_policy.list_principals, window
    )


def disable_principal(
    db: Database, actor_id: str, command: DisablePrincipal
) -> iam_policy.Principal:
    """Disable a principal and revoke its keys and sessions: it stops authenticating at once.
    Idempotent.

    Raises:
        NotFound: no principal has this id.
        Forbidden: the caller may not administer the Installation (audited).
        Conflict: an Agent's service principal (it is disabled with its Agent).
        LastAdministrator: no administrator that can sign in would be left (audited; nothing
            changed).
    """
    principal_id = command.principal_id
    admission.require_id("principal", principal_id)
    with admission.guarded(db, actor_id) as session:
        change = policy.administer(
            session, actor_id, "principals.disable", {"principalId": principal_id}
        )
        grants.lock_administrators(session)
        principal = policy.principal(session, principal_id, lock=True)
        if principal.disabled:
            return principal
        if principal.agent_id is not None:
            raise errors.Conflict("an Agent's service principal is disabled with its Agent")
        disabled = iam_policy.disable_principal(session, principal_id)
        assert disabled is not None  # locked above
        revoked_keys = api_keys.revoke_all_of(session, principal_id)
        revoked_sessions = user_sessions.revoke_all_of(session, principal_id)
        policy.keep_an_administrator(change, {"principalId": principal_id})
        change.audit(
            "principal",
            principal_id,
            principal.namespace_id,
            {
                "reason": "requested",
                "revokedKeyIds": revoked_keys,
                "revokedSessionIds": revoked_sessions,
            },
        )
        return disabled


# -- API keys -----------------------------------------------------------------------------------


def mint_api_key(db: Database, actor_id: str, command: MintApiKey, *, pepper: str) -> NewApiKey:
    """Mint an API key (hashed with ``pepper``) for a principal that is enabled and not owned by
    an Agent.

    Raises:
        NotFound: no principal has this id.
        Forbidden: the caller may not administer the Installation (audited).
        Conflict: the principal is disabled, or an Agent's service principal.
    """
    principal_id = command.principal_id
    admission.require_id("principal", principal_id)
    with admission.guarded(db, actor_id) as session:
        change = policy.administer(
            session, actor_id, "api_keys.create", {"principalId": principal_id}
        )
        principal = policy.principal(session, principal_id, lock=True)
        if principal.disabled:
            raise errors.Conflict("the principal is disabled")
        if principal.agent_id is not None:
            raise errors.Conflict("an Agent's service principal gets no API keys")
        minted = api_keys.mint(session, principal_id=principal_id, pepper=pepper)
        change.audit(
            "api_key", minted.key.id, principal.namespace_id, {"principalId": principal_id}
        )
        return _new_key(minted)


def list_api_keys(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING, *, principal_id: str
) -> keyset.Page[api_keys.ApiKey]:
    """The principal's keys (revoked ones included), oldest first, the page ``window`` asks
    for.

    Raises:
        NotFound: no principal has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    admission.require_id("principal", principal_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        policy.administer(session, actor_id, "api_keys.list")
        policy.principal(session, principal_id)
        return listing.page(
            lambda rows: api_keys.list_for(session, principal_id, rows),
            window,
            keyset.BY_CREATION,
        )


def revoke_api_key(db: Database, actor_id: str, command: RevokeApiKey) -> api_keys.ApiKey:
    """Revoke one of the principal's keys; it stops authenticating at once. Idempotent.

    Raises:
        NotFound: the principal has no key with this id.
        Forbidden: the caller may not administer the Installation (audited).
        LastAdministrator: it is the last key of the last administrator that can sign in
            (audited; nothing changed).
    """
    principal_id, key_id = command.principal_id, command.key_id
    admission.require_id("principal", principal_id)
    _known("api_key", key_id, "the API key does not exist")
    with admission.guarded(db, actor_id) as session:
        change = policy.administer(session, actor_id, "api_keys.revoke")
        grants.lock_administrators(session)
        key = api_keys.get(session, key_id, lock=True)
        if key is None or key.principal_id != principal_id:
            raise errors.NotFound("the API key does not exist")
        already_revoked = key.revoked_at is not None
        revoked = api_keys.revoke(session, key_id)
        assert revoked is not None  # locked above
        if not already_revoked:
            policy.keep_an_administrator(change, {"principalId": principal_id, "keyId": key_id})
            principal = policy.principal(session, principal_id)
            change.audit("api_key", key_id, principal.namespace_id, {"principalId": principal_id})
        return revoked


def issue_first_key(db: Database, *, principal_id: str, pepper: str) -> NewApiKey | None:
    """Mint the bootstrap administrator's first key, unless it ever had one (``None`` then).

    For ``occ bootstrap``, which speaks for the operator of the database and authorizes
    nothing; a bootstrap interrupted between the Installation and the key finishes here.
    """
    with db.transaction() as session:
        # the row lock serializes racing bootstraps
        principal = iam_policy.get_principal(session, principal_id, lock=True)
        if principal is None or principal.disabled or api_keys.list_for(session, principal_id):
            return None
        minted = api_keys.mint(session, principal_id=principal_id, pepper=pepper)
        installation.audit_bootstrap(
            session,
            action="api_keys.create",
            actor_id=principal_id,
            namespace_id=principal.namespace_id,
            resource_kind="api_key",
            resource_id=minted.key.id,
            details={"principalId": principal_id},
        )
        return _new_key(minted)


# -- helpers ------------------------------------------------------------------------------------


def _known(kind: str, value: str, detail: str) -> None:
    if not ids.is_valid(kind, value):
        raise errors.NotFound(detail)


def _new_key(minted: api_keys.MintedKey) -> NewApiKey:
    return NewApiKey(
        id=minted.key.id,
        principal_id=minted.key.principal_id,
        created_at=minted.key.created_at,
        key=minted.plaintext,
    )
