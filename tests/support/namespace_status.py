"""A Namespace's status moved without its worker, where a test stands in for the worker that
reconciles it: set directly as the database owner (occ_app may not write a status by hand),
or by the worker's own row transition."""

from __future__ import annotations

import sqlalchemy as sa

from occ.controller import namespaces
from occ.state import namespaces as namespace_rows
from occ.state.db import Database


def set_status(owner_db: Database, namespace_id: str, status: str = "ready") -> None:
    """Set the Namespace's status to ``status`` in a transaction of its own."""
    with owner_db.transaction() as session:
        session.execute(
            sa.text("UPDATE occ.namespaces SET status = :status WHERE id = :id"),
            {"status": status, "id": namespace_id},
        )


def created_ready(db: Database, *, admin: str, name: str = "team") -> str:
    """A Namespace ``name`` created by ``admin`` and moved from provisioning to ready as its
    worker would (its work item is left as it is); its id."""
    namespace_id = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name=name)).id
    with db.transaction() as session:
        namespace_rows.transition(session, namespace_id, expected="provisioning", status="ready")
    return namespace_id
