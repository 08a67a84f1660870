"""What the IAM administration use cases share: the ``installation:administer`` check (and
the transactions of their creations, reads and lists), the Namespace an IAM row names, and
the rule that someone can always administer the Installation.

Roles, access bindings, restrictions and principals each have their own module
(``occ.controller.roles``, ``access_bindings``, ``restrictions``, ``principals``). Every one
of their use cases needs ``installation:administer`` on the Installation and runs
authorization, state and audit in one transaction (``admission.guarded``). A change that would
leave no principal that can sign in able to administer the Installation (deleting a Role,
revoking a binding or the last key, disabling a principal, adding a restriction) is refused
with ``LastAdministrator`` and audited, so the API can never lock every administrator out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

from occ import iam
from occ.controller import admission, changes, installation, listing
from occ.controller import namespaces as namespace_cases
from occ.foundation import errors, ids
from occ.state import grants, iam_policy, keyset, namespaces, sign_in_means
from occ.state.db import Database, Session

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

PERMISSION: Final = "installation:administer"
"""What every IAM administration use case needs, on the Installation."""


class Lister(Protocol[T_co]):
    """A state function listing rows in creation order, those in ``window``."""

    def __call__(self, session: Session, *, window: keyset.Window) -> Sequence[T_co]: ...


def administer(
    session: Session, actor_id: str, action: str, request: Mapping[str, Any] | None = None
) -> changes.Change:
    """The change ``installation:administer`` on the Installation allows ``action`` to make,
    or ``Denied``.

    The Installation is never hidden: a caller without the permission is answered 403, as by
    ``GET /v1/installation``.
    """
    target = installation.resource(session)
    return admission.permitted_change(
        session, actor_id, action, PERMISSION, target, request=request
    )


def administered_read(db: Database, actor_id: str, action: str, read: Callable[[Session], T]) -> T:
    """What ``read`` answers in a read-only transaction, once ``administer`` allowed ``action``.

    Raises:
        Forbidden: the caller may not administer the Installation (audited).
    """
    with admission.guarded(db, actor_id, read_only=True) as session:
        administer(session, actor_id, action)
        return read(session)


def administered_get(
    db: Database, actor_id: str, kind: str, row_id: str, get: Callable[[Session, str], T | None]
) -> T:
    """The ``kind`` row ``get`` finds, once ``administer`` allowed ``<kind>s.read``.

    Raises:
        NotFound: no ``kind`` has this id (a malformed id before any query).
        Forbidden: the caller may not administer the Installation (audited).
    """
    admission.require_id(kind, row_id)
    return administered_read(
        db, actor_id, f"{kind}s.read", lambda session: admission.found(get(session, row_id), kind)
    )


def administered_page(
    db: Database, actor_id: str, action: str, read: Lister[T], window: keyset.Window
) -> keyset.Page[T]:
    """The page ``window`` asks for of the rows ``read`` lists in creation order, once
    ``administer`` allowed ``action``.

    Raises:
        Forbidden: the caller may not administer the Installation (audited).
    """
    return administered_read(
        db,
        actor_id,
        action,
        lambda session: listing.page(
            lambda rows: read(session, window=rows), window, keyset.BY_CREATION
        ),
    )


class Row(Protocol):
    """An IAM row: what the audit of its creation or revocation names."""

    @property
    def id(self) -> str: ...

    @property
    def namespace_id(self) -> str | None: ...


R = TypeVar("R", bound=Row)


def administered_create(
    db: Database,
    actor_id: str,
    kind: str,
    request: Mapping[str, Any],
    insert: Callable[[Session], R],
) -> R:
    """The ``kind`` row ``insert`` writes, once ``administer`` allowed ``<kind>s.create`` and
    the Namespace the request names (``namespaceId``, if any) is open; audited with the
    request.

    Raises:
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the Namespace does not exist.
        Conflict: the Namespace is being deleted.
    """
    namespace_id = request.get("namespaceId")
    with admission.guarded(db, actor_id) as session:
        change = administer(session, actor_id, f"{kind}s.create", request)
        if namespace_id is not None:
            open_namespace(session, namespace_id)
        row = insert(session)
        change.audit(kind, row.id, namespace_id, admission.present(request))
        return row


def administered_revoke(
    db: Database,
    actor_id: str,
    kind: str,
    row_id: str,
    *,
    action: str,
    request: Mapping[str, Any],
    get: Callable[[Session, str], R | None],
    revoke: Callable[[Session, str], R | None],
    revoked: Callable[[R], bool],
    details: Callable[[R], Mapping[str, Any]],
) -> R:
    """The ``kind`` row once ``revoke`` ended it (``revoked`` says a row is), once
    ``administer`` allowed ``action``; a repeat changes nothing. Audited with ``details`` of the
    row as it was.

    Raises:
        NotFound: no ``kind`` has this id.
        Forbidden: the caller may not administer the Installation (audited).
        LastAdministrator: no principal that can sign in would be left able to administer the
            Installation (audited with ``request``; nothing changed).
    """
    admission.require_id(kind, row_id)
    with admission.guarded(db, actor_id) as session:
        change = administer(session, actor_id, action)
        grants.lock_administrators(session)
        row = admission.found(get(session, row_id), kind)
        if revoked(row):
            return row
        ended = revoke(session, row_id)
        assert ended is not None  # it existed a moment ago and rows are never removed
        keep_an_administrator(change, request)
        change.audit(kind, row.id, row.namespace_id, details(row))
        return ended


def resource_input(resource: iam_policy.ResourceRef) -> iam_policy.ResourceRef:
    """A resource a request names, or ``InvalidInput`` at its ``resource`` kind or id: a kind
    permissions are checked on, and an id of that kind."""
    if resource.kind not in iam.RESOURCE_KINDS:
        raise errors.InvalidInput.at(
            ("resource", "kind"), "must be one of " + ", ".join(sorted(iam.RESOURCE_KINDS))
        )
    ids.require(resource.kind, resource.id, ("resource", "id"))
    return resource


def open_namespace(session: Session, namespace_id: str) -> None:
    """Lock a live Namespace that is not being deleted, for a new IAM row that names it.

    Raises:
        NotFound: no live Namespace has this id.
        Conflict: the Namespace is being deleted.
    """
    namespace = namespace_cases.live(session, namespace_id, lock=True)
    if namespace.status == namespaces.NamespaceStatus.DELETING:
        raise errors.Conflict("the Namespace is being deleted")


def principal(session: Session, principal_id: str, *, lock: bool = False) -> iam_policy.Principal:
    """The principal with this id (``lock``: under its row lock), or ``NotFound``."""
    return admission.found(iam_policy.get_principal(session, principal_id, lock=lock), "principal")


def optional_id(kind: str, value: object, path: errors.Path) -> None:
    """``InvalidInput`` at ``path`` unless ``value`` is ``None`` or an id of ``kind``."""
    if value is not None:
        ids.require(kind, value, path)


def keep_an_administrator(change: changes.Change, request: Mapping[str, Any] | None = None) -> None:
    """``LastAdministrator`` (audited, nothing changed) unless a principal that can act may
    still administer the Installation.

    Only a principal that can sign in counts, of any kind: not disabled and holding a live API
    key, an identity linked to a sign-in provider, or a live user session or CLI token
    (``occ.state.sign_in_means``). Run after the change, in its transaction, holding the
    administrators lock; ``change`` and ``request`` name the refused change.
    """
    session = change.session
    target = installation.resource(session)
    holders = grants.principals_holding(session, PERMISSION)
    acting = sign_in_means.able_to_sign_in(session, holders)
    for principal_id in holders:
        if (
            principal_id in acting
            and iam.authorize(session, principal_id, PERMISSION, target).allowed
        ):
            return
    details: dict[str, Any] = {"permission": PERMISSION, "reason": "last_administrator"}
    if request is not None:
        details["request"] = admission.present(request)
    raise admission.Refused(
        errors.LastAdministrator(
            "no principal that can sign in would be left with installation:administer; grant "
            "it first to another principal that can sign in (an API key, a linked sign-in or a "
            "live session)"
        ),
        action=change.action,
        resource=target,
        details=details,
    )
