"""Installation use cases: bootstrap the singleton and its first administrator, read it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ import errors, iam, ids
from occ.controller import admission
from occ.db import Database
from occ.state import audit, iam_policy, models

ADMINISTRATOR_ROLE: Final = "Installation administrator"


@dataclass(frozen=True, kw_only=True)
class BootstrapResult:
    """The Installation and its first administrator; ``created`` is False on a repeat."""

    installation_id: str
    installation_name: str
    created: bool
    admin_principal_id: str | None
    administrator_role_id: str | None
    binding_id: str | None


@dataclass(frozen=True, kw_only=True)
class InstallationView:
    """The Installation as callers see it."""

    id: str
    name: str
    created_at: dt.datetime


def bootstrap_installation(db: Database, *, name: str, admin_name: str) -> BootstrapResult:
    """Create the Installation, its administrator Role and a human admin bound to it; idempotent.

    A repeat (or a racing second bootstrap) changes nothing and reports what exists.

    Raises:
        InvalidInput: a name is not a valid name (``/name``, ``/adminName``).
    """
    name = admission.name(name, "/name")
    admin_name = admission.name(admin_name, "/adminName")
    with db.transaction() as session:
        row = session.scalars(
            pg.insert(models.Installation)
            .values(id=ids.new("installation"), name=name)
            .on_conflict_do_nothing()
            .returning(models.Installation)
        ).first()
        if row is None:
            return _existing_bootstrap(session)
        admin = iam_policy.create_principal(session, name=admin_name, kind="human")
        role = iam_policy.create_role(
            session, name=ADMINISTRATOR_ROLE, permissions=iam.ADMINISTRATOR_PERMISSIONS
        )
        binding = iam_policy.bind(
            session, role_id=role.id, principal_id=admin.id, created_by=admin.id
        )
        audit.append(
            session,
            kind="bootstrap",
            action="installation.bootstrap",
            actor_id=admin.id,
            outcome="success",
            resource_kind="installation",
            resource_id=row.id,
            details={
                "name": row.name,
                "adminPrincipalId": admin.id,
                "roleId": role.id,
                "bindingId": binding.id,
            },
        )
        return BootstrapResult(
            installation_id=row.id,
            installation_name=row.name,
            created=True,
            admin_principal_id=admin.id,
            administrator_role_id=role.id,
            binding_id=binding.id,
        )


def get_installation(db: Database, *, actor_id: str) -> InstallationView:
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


def current(session: orm.Session) -> InstallationView:
    row = session.scalars(sa.select(models.Installation)).first()
    if row is None:
        raise errors.NotFound("the installation is not bootstrapped")
    return InstallationView(id=row.id, name=row.name, created_at=row.created_at)


def _existing_bootstrap(session: orm.Session) -> BootstrapResult:
    installation = current(session)
    role = iam_policy.find_role(session, name=ADMINISTRATOR_ROLE)
    bindings = (
        []
        if role is None
        else [
            binding
            for binding in iam_policy.list_bindings(session, role_id=role.id)
            if binding.namespace_id is None and binding.resource_kind is None
        ]
    )
    first = bindings[0] if bindings else None
    return BootstrapResult(
        installation_id=installation.id,
        installation_name=installation.name,
        created=False,
        admin_principal_id=None if first is None else first.principal_id,
        administrator_role_id=None if role is None else role.id,
        binding_id=None if first is None else first.id,
    )
