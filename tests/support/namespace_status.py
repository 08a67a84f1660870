"""A Namespace's status set directly, as the database owner, where a test stands in for the
worker that reconciles it (occ_app may not write a status by hand)."""

from __future__ import annotations

import sqlalchemy as sa

from occ.db import Database


def set_status(owner_db: Database, namespace_id: str, status: str = "ready") -> None:
    """Set the Namespace's status to ``status`` in a transaction of its own."""
    with owner_db.transaction() as session:
        session.execute(
            sa.text("UPDATE occ.namespaces SET status = :status WHERE id = :id"),
            {"status": status, "id": namespace_id},
        )
