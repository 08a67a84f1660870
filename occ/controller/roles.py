"""Role use cases: create, read, list and (soft-)delete Roles (``occ.state.roles.Role``).

They follow the rules of every IAM administration use case (``occ.controller.policy``); a
deletion is what could leave nobody able to administer the Installation. A change takes its
command value (``CreateRole``, ``DeleteRole``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from occ import iam
from occ.controller import admission, policy
from occ.state import keyset
from occ.state import roles as role_rows
from occ.state.db import Database


@dataclass(frozen=True, kw_only=True)
class CreateRole:
    """A new Role holding ``permissions``, Installation-wide or of one Namespace."""

    name: str
    permissions: Sequence[str]
    namespace_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeleteRole:
    """The (soft) deletion of a Role."""

    role_id: str


def create_role(db: Database, actor_id: str, command: CreateRole) -> role_rows.Role:
    """Create a Role holding ``permissions`` (Installation-wide, or of one Namespace).

    Raises:
        InvalidInput: a bad ``name``, ``namespace_id``, or ``permissions`` entry (unknown, or
            not allowed in a Namespace Role; at its index).
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the Namespace does not exist.
        Conflict: a live Role has this name in this scope, or the Namespace is being deleted.
    """
    name = admission.name(command.name, ("name",))
    namespace_id = command.namespace_id
    policy.optional_id("namespace", namespace_id, ("namespace_id",))
    checked = iam.check_permissions(command.permissions, namespace_scoped=namespace_id is not None)
    request = {"name": name, "permissions": list(checked), "namespaceId": namespace_id}
    return policy.administered_create(
        db,
        actor_id,
        "role",
        request,
        lambda session: role_rows.create_role(
            session, name=name, permissions=checked, namespace_id=namespace_id
        ),
    )


def get_role(db: Database, actor_id: str, role_id: str) -> role_rows.Role:
    """A Role, deleted or not.

    Raises:
        NotFound: no Role has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    return policy.administered_get(db, actor_id, "role", role_id, role_rows.get_role)


def list_roles(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING
) -> keyset.Page[role_rows.Role]:
    """The live Roles in creation order, the page ``window`` asks for."""
    return policy.administered_page(db, actor_id, "roles.list", role_rows.list_roles, window)


def delete_role(db: Database, actor_id: str, command: DeleteRole) -> role_rows.Role:
    """Soft-delete a Role: its bindings stop granting. A repeat changes nothing.

    Raises:
        NotFound: no Role has this id.
        Forbidden: the caller may not administer the Installation (audited).
        LastAdministrator: no principal that can sign in would be left able to administer the
            Installation (audited; nothing changed).
    """
    return policy.administered_revoke(
        db,
        actor_id,
        "role",
        command.role_id,
        action="roles.delete",
        request={"roleId": command.role_id},
        get=role_rows.get_role,
        revoke=role_rows.delete_role,
        revoked=lambda role: role.deleted_at is not None,
        details=lambda role: {"name": role.name},
    )
