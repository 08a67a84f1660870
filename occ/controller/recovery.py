"""Break-glass recovery: give the Installation's bootstrap administrator a fresh API key and
make sure it can administer again.

For ``occ bootstrap --recover-admin``, which speaks for whoever holds the database owner's
credentials and so authorizes nothing through IAM. One transaction, under the administrators
lock: re-enable the bootstrap principal, restore an Installation-wide binding to a Role holding
every administrator permission (re-creating the Role if it is gone), lift the restrictions that
would still deny it ``installation:administer``, mint a key and audit it all
(``installation.recover_admin``, kind ``bootstrap``). Never mints a key for another principal;
the key's plaintext leaves only through the return value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from occ import iam
from occ.controller import installation, policy
from occ.foundation import errors
from occ.state import api_keys, grants, iam_policy, restrictions
from occ.state import roles as role_rows
from occ.state.db import Database, Session

ACTION: Final = "installation.recover_admin"
RECOVERED_ROLE: Final = f"{installation.ADMINISTRATOR_ROLE} (recovered)"
"""The Role made when a live Role of the usual name exists but no longer holds every
administrator permission."""


@dataclass(frozen=True, kw_only=True)
class RecoveredAdmin:
    """What recovery did; ``key`` is shown to the operator once and then forgotten."""

    installation_id: str
    principal_id: str
    key_id: str
    key: str = field(repr=False)
    reenabled: bool
    role_id: str
    binding_id: str
    rebound: bool
    lifted_restriction_ids: tuple[str, ...]


def recover_admin(db: Database, *, pepper: str) -> RecoveredAdmin:
    """Restore the bootstrap administrator's access and mint it a new key.

    ``db`` should connect as the database owner (the operator's authority).

    Raises:
        NotFound: the Installation is not bootstrapped.
        Conflict: its bootstrap administrator cannot be found (no bootstrap audit event).
    """
    with db.transaction() as session:
        grants.lock_administrators(session)
        current = installation.current(session)
        principal_id = installation.bootstrap_principal_id(session)
        principal = (
            None
            if principal_id is None
            else iam_policy.get_principal(session, principal_id, lock=True)
        )
        if principal is None:
            raise errors.Conflict("the installation's bootstrap administrator cannot be found")
        reenabled = principal.disabled
        if reenabled:
            iam_policy.enable_principal(session, principal.id)
        role = _administrator_role(session)
        binding, rebound = _installation_binding(session, role.id, principal.id)
        target = iam.Resource.installation(current.id)
        lifted = _lift_restrictions(session, principal.id, current.id)
        if not iam.authorize(session, principal.id, policy.PERMISSION, target).allowed:
            raise errors.Conflict("the bootstrap administrator could not be given access back")
        minted = api_keys.mint(session, principal_id=principal.id, pepper=pepper)
        details: dict[str, Any] = {
            "principalId": principal.id,
            "keyId": minted.key.id,
            "reenabled": reenabled,
            "roleId": role.id,
            "bindingId": binding.id,
            "rebound": rebound,
            "liftedRestrictionIds": list(lifted),
        }
        installation.audit_bootstrap(
            session,
            action=ACTION,
            actor_id=principal.id,
            resource_kind="installation",
            resource_id=current.id,
            details=details,
        )
        return RecoveredAdmin(
            installation_id=current.id,
            principal_id=principal.id,
            key_id=minted.key.id,
            key=minted.plaintext,
            reenabled=reenabled,
            role_id=role.id,
            binding_id=binding.id,
            rebound=rebound,
            lifted_restriction_ids=lifted,
        )


def _administrator_role(session: Session) -> role_rows.Role:
    """A live Installation Role holding every administrator permission, made if none is left."""
    wanted = set(iam.ADMINISTRATOR_PERMISSIONS)
    for name in (installation.ADMINISTRATOR_ROLE, RECOVERED_ROLE):
        role = role_rows.find_role(session, name=name)
        if role is not None and wanted <= set(role.permissions):
            return role
    taken = role_rows.find_role(session, name=installation.ADMINISTRATOR_ROLE) is not None
    return role_rows.create_role(
        session,
        name=RECOVERED_ROLE if taken else installation.ADMINISTRATOR_ROLE,
        permissions=iam.ADMINISTRATOR_PERMISSIONS,
    )


def _installation_binding(
    session: Session, role_id: str, principal_id: str
) -> tuple[iam_policy.AccessBinding, bool]:
    """The principal's live Installation-wide binding to the Role, and whether it is new."""
    existing = installation.installation_binding(session, role_id, principal_id)
    if existing is not None:
        return existing, False
    created = iam_policy.bind(
        session, role_id=role_id, principal_id=principal_id, created_by=principal_id
    )
    return created, True


def _lift_restrictions(
    session: Session, principal_id: str, installation_id: str
) -> tuple[str, ...]:
    """Remove the restrictions that deny the principal ``installation:administer`` on the
    Installation; their ids."""
    lifted = []
    for restriction in restrictions.list_all(session):
        applies = (
            restriction.permission == policy.PERMISSION
            and restriction.principal_id in (None, principal_id)
            and restriction.namespace_id is None
            and restriction.resource_id in (None, installation_id)
        )
        if applies and restrictions.delete(session, restriction.id):
            lifted.append(restriction.id)
    return tuple(lifted)
