"""Installation use cases: bootstrap the singleton and its first administrator, read it.

Break-glass recovery of that administrator is ``occ.controller.recovery``.

Reads return ``occ.state.installation.Installation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Unpack

from occ import iam
from occ.controller import admission
from occ.foundation import errors
from occ.state import audit, iam_policy
from occ.state import installation as state
from occ.state import roles as role_rows
from occ.state.db import Database, Session

ADMINISTRATOR_ROLE: Final = "Installation administrator"
BOOTSTRAP_ACTION: Final = "installation.bootstrap"


@dataclass(frozen=True, kw_only=True)
class BootstrapResult:
    """The Installation and its first administrator; ``created`` is False on a repeat."""

    installation_id: str
    installation_name: str
    created: bool
    admin_principal_id: str | None
    administrator_role_id: str | None
    binding_id: str | None


def bootstrap_installation(db: Database, *, name: str, admin_name: str) -> BootstrapResult:
    """Create the Installation, its administrator Role and a human admin bound to it; idempotent.

    A repeat (or a racing second bootstrap) changes nothing and reports what exists: the
    principal the first bootstrap made administrator (never another one).

    Raises:
        InvalidInput: a name is not a valid name (``name``, ``admin_name``).
    """
    name = admission.name(name, ("name",))
    admin_name = admission.name(admin_name, ("admin_name",))
    with db.transaction() as session:
        created = state.insert(session, name=name)
        if created is None:
            return _existing_bootstrap(session)
        admin = iam_policy.create_principal(
            session, name=admin_name, kind=iam_policy.PrincipalKind.HUMAN
        )
        role = role_rows.create_role(
            session, name=ADMINISTRATOR_ROLE, permissions=iam.ADMINISTRATOR_PERMISSIONS
        )
        binding = iam_policy.bind(
            session, role_id=role.id, principal_id=admin.id, created_by=admin.id
        )
        audit_bootstrap(
            session,
            action=BOOTSTRAP_ACTION,
            actor_id=admin.id,
            resource_kind="installation",
            resource_id=created.id,
            details={
                "name": created.name,
                "adminPrincipalId": admin.id,
                "roleId": role.id,
                "bindingId": binding.id,
            },
        )
        return BootstrapResult(
            installation_id=created.id,
            installation_name=created.name,
            created=True,
            admin_principal_id=admin.id,
            administrator_role_id=role.id,
            binding_id=binding.id,
        )


def get_installation(db: Database, actor_id: str) -> state.Installation:
    """The Installation (``installation:read``).

    Raises:
        NotFound: not bootstrapped yet.
        Forbidden: the caller may not read it.
    """
    with admission.guarded(db, actor_id, read_only=True) as session:
        installation = current(session)
        admission.require(
            session,
            actor_id,
            "installation.read",
            "installation:read",
            iam.Resource.installation(installation.id),
        )
        return installation


def installation_id(db: Database) -> str:
    """The Installation's id, what a check of an Installation-wide permission names (an id,
    not a secret: no permission is needed to learn it).

    Raises:
        NotFound: not bootstrapped yet.
    """
    with db.snapshot() as session:
        return current(session).id


def current(session: Session) -> state.Installation:
    """The Installation, or ``NotFound`` before bootstrap."""
    installation = state.current(session)
    if installation is None:
        raise errors.NotFound("the installation is not bootstrapped")
    return installation


def resource(session: Session) -> iam.Resource:
    """The Installation as what permissions on it are checked on, or ``NotFound`` before
    bootstrap."""
    return iam.Resource.installation(current(session).id)


def bootstrap_principal_id(session: Session) -> str | None:
    """The principal ``occ bootstrap`` made the first administrator (from its audit event)."""
    installation = current(session)
    events = audit.list_events(
        session, resource_id=installation.id, kind=audit.EventKind.BOOTSTRAP, limit=audit.MAX_LIMIT
    )
    for event in reversed(events):  # oldest first: the Installation's own bootstrap
        if event.action == BOOTSTRAP_ACTION:
            principal_id = event.details.get("adminPrincipalId")
            return principal_id if isinstance(principal_id, str) else None
    return None


def installation_binding(
    session: Session, role_id: str, principal_id: str
) -> iam_policy.AccessBinding | None:
    """The principal's first live Installation-wide binding to the Role, if any."""
    for binding in iam_policy.list_bindings(session, role_id=role_id, principal_id=principal_id):
        if binding.namespace_id is None and binding.resource_kind is None:
            return binding
    return None


def audit_bootstrap(session: Session, **event: Unpack[audit.Change]) -> None:
    """Audit what the operator of the database did through ``occ bootstrap`` (kind
    ``bootstrap``, outcome ``success``): it authorizes nothing, so no decision is recorded."""
    audit.append(
        session, kind=audit.EventKind.BOOTSTRAP, outcome=audit.EventOutcome.SUCCESS, **event
    )


def _existing_bootstrap(session: Session) -> BootstrapResult:
    """What the first bootstrap made: its administrator, whatever other admins exist now."""
    installation = current(session)
    role = role_rows.find_role(session, name=ADMINISTRATOR_ROLE)
    admin_id = bootstrap_principal_id(session)
    binding = (
        None
        if role is None or admin_id is None
        else installation_binding(session, role.id, admin_id)
    )
    return BootstrapResult(
        installation_id=installation.id,
        installation_name=installation.name,
        created=False,
        admin_principal_id=admin_id,
        administrator_role_id=None if role is None else role.id,
        binding_id=None if binding is None else binding.id,
    )
