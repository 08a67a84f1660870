"""Principal and API-key use cases: create, read and list principals; mint, list, revoke keys.

Every use case needs ``installation:administer`` on the Installation and runs authorization,
state and audit in one transaction (``admission.guarded``). A minted key's plaintext leaves
only through the return value, once: it is never audited, logged or stored. Agent-owned
service principals are made with their Agent; they are listed here but get no API keys.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy import orm

from occ import errors, ids
from occ.controller import admission, policy
from occ.db import Database
from occ.state import api_keys, audit, iam_policy, models


@dataclass(frozen=True, kw_only=True)
class PrincipalView:
    """A principal as callers see it; ``agent_id`` names the Agent owning a service principal."""

    id: str
    name: str
    kind: str
    namespace_id: str | None
    agent_id: str | None
    created_at: dt.datetime
    disabled_at: dt.datetime | None


@dataclass(frozen=True, kw_only=True)
class ApiKeyView:
    """API-key metadata (never the secret)."""

    id: str
    principal_id: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None
    last_used_at: dt.datetime | None


@dataclass(frozen=True, kw_only=True)
class NewApiKey:
    """A freshly minted key: ``key`` is shown to its owner once and then forgotten."""

    id: str
    principal_id: str
    created_at: dt.datetime
    key: str = field(repr=False)


# -- principals ---------------------------------------------------------------------------------


def create_principal(
    db: Database, *, actor_id: str, name: str, kind: str, namespace_id: str | None = None
) -> PrincipalView:
    """Create a human or service principal; a service principal may belong to a Namespace.

    Raises:
        InvalidInput: a bad ``/name``, ``/kind`` or ``/namespaceId`` (humans are never
            Namespace-scoped).
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the Namespace does not exist.
        Conflict: the Namespace is being deleted.
    """
    name = admission.name(name, "/name")
    if kind not in iam_policy.PRINCIPAL_KINDS:
        raise errors.InvalidInput.at("/kind", "must be human or service")
    policy.optional_id("namespace", namespace_id, "/namespaceId")
    if namespace_id is not None and kind != "service":
        raise errors.InvalidInput.at(
            "/namespaceId", "only a service principal may belong to a Namespace"
        )
    request = {"name": name, "kind": kind, "namespaceId": namespace_id}
    with admission.guarded(db, actor_id) as session:
        decision = policy.administer(session, actor_id, "principals.create", request)
        if namespace_id is not None:
            policy.open_namespace(session, namespace_id)
        principal = iam_policy.create_principal(
            session, name=name, kind=kind, namespace_id=namespace_id
        )
        audit.append(
            session,
            kind="mutation",
            action="principals.create",
            actor_id=actor_id,
            outcome="success",
            namespace_id=namespace_id,
            resource_kind="principal",
            resource_id=principal.id,
            details={**admission.present(request), "authorization": decision.evidence.as_details()},
        )
        return principal_view(principal)


def get_principal(db: Database, *, actor_id: str, principal_id: str) -> PrincipalView:
    """A principal, disabled or not.

    Raises:
        NotFound: no principal has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    _known("principal", principal_id, "the principal does not exist")
    with admission.guarded(db, actor_id, read_only=True) as session:
        policy.administer(session, actor_id, "principals.read")
        return principal_view(_principal(session, principal_id))


def list_principals(db: Database, *, actor_id: str) -> list[PrincipalView]:
    """Every principal (Agent-owned service principals included) in creation order."""
    with admission.guarded(db, actor_id, read_only=True) as session:
        policy.administer(session, actor_id, "principals.list")
        rows = session.scalars(
            sa.select(models.Principal).order_by(models.Principal.created_at, models.Principal.id)
        )
        return [
            PrincipalView(
                id=row.id,
                name=row.name,
                kind=row.kind,
                namespace_id=row.namespace_id,
                agent_id=row.agent_id,
                created_at=row.created_at,
                disabled_at=row.disabled_at,
            )
            for row in rows
        ]


# -- API keys -----------------------------------------------------------------------------------


def mint_api_key(db: Database, *, actor_id: str, principal_id: str, pepper: str) -> NewApiKey:
    """Mint an API key for a principal that is enabled and not owned by an Agent.

    Raises:
        NotFound: no principal has this id.
        Forbidden: the caller may not administer the Installation (audited).
        Conflict: the principal is disabled, or an Agent's service principal.
    """
    _known("principal", principal_id, "the principal does not exist")
    with admission.guarded(db, actor_id) as session:
        decision = policy.administer(
            session, actor_id, "api_keys.create", {"principalId": principal_id}
        )
        principal = _principal(session, principal_id, lock=True)
        if principal.disabled:
            raise errors.Conflict("the principal is disabled")
        if principal.agent_id is not None:
            raise errors.Conflict("an Agent's service principal gets no API keys")
        minted = api_keys.mint(session, principal_id=principal_id, pepper=pepper)
        audit.append(
            session,
            kind="mutation",
            action="api_keys.create",
            actor_id=actor_id,
            outcome="success",
            namespace_id=principal.namespace_id,
            resource_kind="api_key",
            resource_id=minted.key.id,
            details={"principalId": principal_id, "authorization": decision.evidence.as_details()},
        )
        return _new_key(minted)


def list_api_keys(db: Database, *, actor_id: str, principal_id: str) -> list[ApiKeyView]:
    """The principal's keys (revoked ones included), oldest first.

    Raises:
        NotFound: no principal has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    _known("principal", principal_id, "the principal does not exist")
    with admission.guarded(db, actor_id, read_only=True) as session:
        policy.administer(session, actor_id, "api_keys.list")
        _principal(session, principal_id)
        return [key_view(key) for key in api_keys.list_for(session, principal_id)]


def revoke_api_key(db: Database, *, actor_id: str, principal_id: str, key_id: str) -> ApiKeyView:
    """Revoke one of the principal's keys; it stops authenticating at once. Idempotent.

    Raises:
        NotFound: the principal has no key with this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    _known("principal", principal_id, "the principal does not exist")
    _known("api_key", key_id, "the API key does not exist")
    with admission.guarded(db, actor_id) as session:
        decision = policy.administer(session, actor_id, "api_keys.revoke")
        row = session.get(models.ApiKey, key_id, with_for_update=True, populate_existing=True)
        if row is None or row.principal_id != principal_id:
            raise errors.NotFound("the API key does not exist")
        already_revoked = row.revoked_at is not None
        revoked = api_keys.revoke(session, key_id)
        assert revoked is not None  # locked above
        if not already_revoked:
            principal = _principal(session, principal_id)
            audit.append(
                session,
                kind="mutation",
                action="api_keys.revoke",
                actor_id=actor_id,
                outcome="success",
                namespace_id=principal.namespace_id,
                resource_kind="api_key",
                resource_id=key_id,
                details={
                    "principalId": principal_id,
                    "authorization": decision.evidence.as_details(),
                },
            )
        return key_view(revoked)


def issue_first_key(db: Database, *, principal_id: str, pepper: str) -> NewApiKey | None:
    """Mint the bootstrap administrator's first key, unless it ever had one (``None`` then).

    For ``occ bootstrap``, which speaks for the operator of the database and authorizes
    nothing; a bootstrap interrupted between the Installation and the key finishes here.
    """
    with db.transaction() as session:
        _lock(session, principal_id)  # serializes racing bootstraps
        principal = iam_policy.get_principal(session, principal_id)
        if principal is None or principal.disabled or api_keys.list_for(session, principal_id):
            return None
        minted = api_keys.mint(session, principal_id=principal_id, pepper=pepper)
        audit.append(
            session,
            kind="bootstrap",
            action="api_keys.create",
            actor_id=principal_id,
            outcome="success",
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


def _principal(
    session: orm.Session, principal_id: str, *, lock: bool = False
) -> iam_policy.Principal:
    if lock:
        _lock(session, principal_id)
    principal = iam_policy.get_principal(session, principal_id)
    if principal is None:
        raise errors.NotFound("the principal does not exist")
    return principal


def _lock(session: orm.Session, principal_id: str) -> None:
    session.execute(
        sa.select(models.Principal.id).where(models.Principal.id == principal_id).with_for_update()
    )


def _new_key(minted: api_keys.MintedKey) -> NewApiKey:
    return NewApiKey(
        id=minted.key.id,
        principal_id=minted.key.principal_id,
        created_at=minted.key.created_at,
        key=minted.plaintext,
    )


def principal_view(principal: iam_policy.Principal) -> PrincipalView:
    return PrincipalView(
        id=principal.id,
        name=principal.name,
        kind=principal.kind,
        namespace_id=principal.namespace_id,
        agent_id=principal.agent_id,
        created_at=principal.created_at,
        disabled_at=principal.disabled_at,
    )


def key_view(key: api_keys.ApiKey) -> ApiKeyView:
    return ApiKeyView(
        id=key.id,
        principal_id=key.principal_id,
        created_at=key.created_at,
        revoked_at=key.revoked_at,
        last_used_at=key.last_used_at,
    )
