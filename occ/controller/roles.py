"""Role use cases: create, read, list and (soft-)delete Roles.

Each needs ``installation:administer`` on the Installation and runs authorization, state and
audit in one transaction; deleting a Role that would leave nobody able to administer the
Installation (counting only principals that can sign in) is refused. They return
``occ.state.role_rows.Role`` values.
"""

from __future__ import annotations

from collections.abc import Sequence

from occ import errors, iam
from occ.controller import admission, policy
from occ.db import Database
from occ.state import grants, keyset
from occ.state import roles as role_rows


def create_role(
    db: Database,
    *,
    actor_id: str,
    name: str,
    permissions: Sequence[str],
    namespace_id: str | None = None,
) -> role_rows.Role:
    """Create a Role holding ``permissions`` (Installation-wide, or of one Namespace).

    Raises:
        InvalidInput: a bad ``/name``, ``/namespaceId``, or ``/permissions/<index>`` (unknown,
            or not allowed in a Namespace Role).
        Forbidden: the caller may not administer the Installation (audited).
        NotFound: the Namespace does not exist.
        Conflict: a live Role has this name in this scope, or the Namespace is being deleted.
    """
    name = admission.name(name, "/name")
    policy.optional_id("namespace", namespace_id, "/namespaceId")
    if not isinstance(permissions, list | tuple):
        raise errors.InvalidInput.at("/permissions", "must be a list of permissions")
    checked = iam.check_permissions(permissions, namespace_scoped=namespace_id is not None)
    request = {"name": name, "permissions": list(checked), "namespaceId": namespace_id}
    with admission.guarded(db, actor_id) as session:
        change = policy.administer(session, actor_id, "roles.create", request)
        if namespace_id is not None:
            policy.open_namespace(session, namespace_id)
        role = role_rows.create_role(
            session, name=name, permissions=checked, namespace_id=namespace_id
        )
        change.audit("role", role.id, namespace_id, admission.present(request))
        return role


def get_role(db: Database, *, actor_id: str, role_id: str) -> role_rows.Role:
    """A Role, deleted or not.

    Raises:
        NotFound: no Role has this id.
        Forbidden: the caller may not administer the Installation (audited).
    """
    return policy.administered_get(db, actor_id, "role", role_id, role_rows.get_role)


def list_roles(
    db: Database, *, actor_id: str, window: keyset.Window = keyset.EVERYTHING
) -> keyset.Page[role_rows.Role]:
    """The live Roles in creation order, the page ``window`` asks for."""
    return policy.administered_page(db, actor_id, "roles.list", role_rows.list_roles, window)


def delete_role(db: Database, *, actor_id: str, role_id: str) -> role_rows.Role:
    """Soft-delete a Role: its bindings stop granting. A repeat changes nothing.

    Raises:
        NotFound: no Role has this id.
        Forbidden: the caller may not administer the Installation (audited).
        LastAdministrator: no principal that can sign in would be left able to administer the
            Installation (audited; nothing changed).
    """
    policy.known("role", role_id)
    with admission.guarded(db, actor_id) as session:
        change = policy.administer(session, actor_id, "roles.delete")
        grants.lock_administrators(session)
        role = admission.found(role_rows.get_role(session, role_id), "role")
        if role.deleted_at is not None:
            return role
        deleted = role_rows.delete_role(session, role_id)
        assert deleted is not None  # it existed a moment ago and rows are never removed
        policy.keep_an_administrator(change, {"roleId": role_id})
        change.audit("role", role.id, role.namespace_id, {"name": role.name})
        return deleted
