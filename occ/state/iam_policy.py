"""IAM policy rows: principals and access bindings (Roles are ``occ.state.roles``).

Takes the caller's session and never commits; decides nothing (``occ.iam`` evaluates, with the
policy ``occ.state.grants`` loads; deny rules are ``occ.state.restrictions``). The application
role may not DELETE principals, roles or bindings: principals are disabled, roles soft-deleted
and bindings revoked.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import errors, ids
from occ.state import keyset, models, roles, rows

RESOURCE_KINDS: Final = frozenset(
    {"installation", "namespace", "configuration", "secret", "agent", "agent_revision", "account"}
)

_PRINCIPALS: Final = cast(sa.Table, models.Principal.__table__)
_BINDINGS: Final = cast(sa.Table, models.AccessBinding.__table__)
_NAMESPACED_TABLES: Final = {
    "configuration": cast(sa.Table, models.Configuration.__table__),
    "secret": cast(sa.Table, models.Secret.__table__),
    "agent": cast(sa.Table, models.Agent.__table__),
    "agent_revision": cast(sa.Table, models.AgentRevision.__table__),
    "account": cast(sa.Table, models.Account.__table__),
}
"""The tables of the resource kinds that live inside a Namespace (binding targets)."""


class PrincipalKind(enum.StrEnum):
    """A person, or a workload (an Agent's own principal is a service principal)."""

    HUMAN = "human"
    SERVICE = "service"


PRINCIPAL_KINDS: Final = frozenset(PrincipalKind)


@dataclass(frozen=True, kw_only=True)
class Principal:
    """A human or service identity; Namespace-scoped when ``namespace_id`` is set.

    ``agent_id`` names the Agent that owns a service principal.
    """

    id: str
    name: str
    kind: PrincipalKind
    namespace_id: str | None
    agent_id: str | None
    created_at: dt.datetime
    disabled_at: dt.datetime | None

    @property
    def disabled(self) -> bool:
        return self.disabled_at is not None


@dataclass(frozen=True)
class ResourceRef:
    """The exact resource a binding is limited to."""

    kind: str
    id: str


@dataclass(frozen=True, kw_only=True)
class AccessBinding:
    """A Role granted to a principal Installation-wide, in one Namespace, or on one resource.

    ``revoked_at`` is set once it was revoked.
    """

    id: str
    role_id: str
    principal_id: str
    namespace_id: str | None
    resource_kind: str | None
    resource_id: str | None
    created_by: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None

    @property
    def resource(self) -> ResourceRef | None:
        """The exact resource the binding is limited to, if any."""
        if self.resource_kind is None or self.resource_id is None:
            return None
        return ResourceRef(self.resource_kind, self.resource_id)


_PRINCIPAL_VALUES: Final = rows.Values(_PRINCIPALS, Principal, convert={"kind": PrincipalKind})
_BINDING_VALUES: Final = rows.Values(_BINDINGS, AccessBinding)


# -- principals ---------------------------------------------------------------------------------


def create_principal(
    session: orm.Session,
    *,
    name: str,
    kind: str,
    namespace_id: str | None = None,
    agent_id: str | None = None,
) -> Principal:
    """Insert a principal (``human`` or ``service``; Namespace-scoped if ``namespace_id``)."""
    if kind not in PRINCIPAL_KINDS:
        raise ValueError(f"unknown principal kind {kind!r}")
    return _PRINCIPAL_VALUES.inserted(
        session,
        id=ids.new("principal"),
        name=name,
        kind=PrincipalKind(kind),
        namespace_id=namespace_id,
        agent_id=agent_id,
    )


def get_principal(
    session: orm.Session, principal_id: str, *, lock: bool = False
) -> Principal | None:
    """The principal, disabled or not, or ``None``; ``lock`` takes its row lock."""
    return _PRINCIPAL_VALUES.get(session, principal_id, lock=lock)


def list_principals(
    session: orm.Session, window: keyset.Window = keyset.EVERYTHING
) -> list[Principal]:
    """Every principal (Agent-owned service principals included) in creation order (those in
    ``window``)."""
    return _PRINCIPAL_VALUES.window(session, window)


def disable_principal(session: orm.Session, principal_id: str) -> Principal | None:
    """Disable the principal (idempotent: keeps the first ``disabled_at``); ``None`` if missing."""
    return _PRINCIPAL_VALUES.stamp(session, principal_id, "disabled_at")


def enable_principal(session: orm.Session, principal_id: str) -> Principal | None:
    """Clear the principal's ``disabled_at`` (break-glass recovery only); ``None`` if missing."""
    session.execute(
        sa.update(_PRINCIPALS)
        .where(_PRINCIPALS.c.id == principal_id, _PRINCIPALS.c.disabled_at.is_not(None))
        .values(disabled_at=None)
    )
    return get_principal(session, principal_id)


def disable_scoped_to(session: orm.Session, namespace_id: str) -> list[Principal]:
    """Disable every enabled principal scoped to the Namespace; the ones this disabled, by id."""
    scoped = _PRINCIPALS.c.namespace_id == namespace_id
    statement = rows.stamped(_PRINCIPALS, "disabled_at", scoped).returning(*_PRINCIPALS.c)
    disabled = rows.every(session, statement, _PRINCIPAL_VALUES.make)
    return sorted(disabled, key=lambda principal: principal.id)


# -- access bindings ----------------------------------------------------------------------------


def bind(
    session: orm.Session,
    *,
    role_id: str,
    principal_id: str,
    created_by: str,
    namespace_id: str | None = None,
    resource_kind: str | None = None,
    resource_id: str | None = None,
) -> AccessBinding:
    """Grant a live Role to a principal at one scope.

    No namespace and no resource: Installation-wide. ``namespace_id`` alone: that Namespace.
    ``resource_kind`` + ``resource_id``: that exact resource (inside ``namespace_id`` unless
    the kind is ``installation``).

    Raises:
        NotFound: the Role (live) or the principal does not exist.
        InvalidInput: the scope is malformed, or a Namespace Role is bound outside its Namespace.
    """
    if (resource_kind is None) != (resource_id is None):
        raise errors.InvalidInput.at(("resource_id",), "give both resource kind and id, or neither")
    if resource_kind is not None:
        if resource_kind not in RESOURCE_KINDS:
            raise errors.InvalidInput.at(("resource_kind",), "unknown resource kind")
        if resource_kind == "installation" and namespace_id is not None:
            raise errors.InvalidInput.at(("namespace_id",), "the installation is in no Namespace")
        if resource_kind != "installation" and namespace_id is None:
            raise errors.InvalidInput.at(
                ("namespace_id",), "a resource binding needs its Namespace"
            )
        if resource_kind == "namespace" and resource_id != namespace_id:
            raise errors.InvalidInput.at(
                ("resource_id",), "a Namespace binding names its Namespace"
            )
    role = roles.get_role(session, role_id)
    if role is None or role.deleted_at is not None:
        raise errors.NotFound("the role does not exist")
    if get_principal(session, principal_id) is None:
        raise errors.NotFound("the principal does not exist")
    if role.namespace_id is not None and role.namespace_id != namespace_id:
        raise errors.InvalidInput.at(
            ("role_id",), "a Namespace role is bound only in its Namespace"
        )
    return _BINDING_VALUES.inserted(
        session,
        id=ids.new("access_binding"),
        role_id=role_id,
        principal_id=principal_id,
        namespace_id=namespace_id,
        resource_kind=resource_kind,
        resource_id=resource_id,
        created_by=created_by,
    )


def get_binding(session: orm.Session, binding_id: str) -> AccessBinding | None:
    """The binding, revoked or not, or ``None``."""
    return _BINDING_VALUES.get(session, binding_id)


def list_bindings(
    session: orm.Session,
    *,
    principal_id: str | None = None,
    role_id: str | None = None,
    namespace_id: str | None = None,
    include_revoked: bool = False,
    window: keyset.Window = keyset.EVERYTHING,
) -> list[AccessBinding]:
    """Bindings matching every given filter, in creation order (those in ``window``)."""
    where = rows.given(
        _BINDINGS, principal_id=principal_id, role_id=role_id, namespace_id=namespace_id
    )
    if not include_revoked:
        where.append(_BINDINGS.c.revoked_at.is_(None))
    return _BINDING_VALUES.window(session, window, *where)


def revoke_binding(session: orm.Session, binding_id: str) -> AccessBinding | None:
    """Revoke the binding (idempotent); ``None`` if missing."""
    return _BINDING_VALUES.stamp(session, binding_id, "revoked_at")


def resource_exists(session: orm.Session, kind: str, resource_id: str, namespace_id: str) -> bool:
    """Whether a Configuration, Secret, Agent or AgentRevision with this id is in the Namespace
    (the target of a resource binding)."""
    table = _NAMESPACED_TABLES[kind]
    query = sa.select(
        sa.exists().where(table.c.id == resource_id, table.c.namespace_id == namespace_id)
    )
    return bool(session.execute(query).scalar())
