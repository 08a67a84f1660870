"""Migration 0004 on real PostgreSQL: the revision counter is backfilled from each Agent's
highest revision number (0 without revisions), and the application role may advance it."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from occ.state import schema
from occ.state.db import Database
from tests.support import databases, rows


def counters(database: Database) -> dict[str, int]:
    with database.transaction() as session:
        found = session.execute(sa.text("SELECT id, revision_counter FROM occ.agents"))
        return {row.id: int(row.revision_counter) for row in found}


def test_the_counter_is_backfilled_from_the_highest_revision() -> None:
    urls = databases.create_test_database(f"occ_counter_{uuid.uuid4().hex[:8]}")
    owner = Database(urls.owner, pool_size=1)
    app = Database(urls.app, pool_size=1)
    try:
        with owner.transaction() as session:
            actor = rows.principal(session)
            namespace_id = rows.namespace(session, created_by=actor, status="ready")
            deployed = rows.agent(session, namespace_id=namespace_id, name="deployed")
            fresh = rows.agent(session, namespace_id=namespace_id, name="fresh")
            for number in (1, 2, 3, 7):  # the highest counts, not how many there are
                rows.revision(
                    session,
                    namespace_id=namespace_id,
                    agent_id=deployed,
                    actor_id=actor,
                    number=number,
                )
        owner.dispose()
        schema.downgrade(urls.owner, "0003")
        schema.upgrade(urls.owner)

        assert counters(owner) == {deployed: 7, fresh: 0}
        with app.transaction() as session:
            advanced = session.execute(
                sa.text(
                    "UPDATE occ.agents SET revision_counter = revision_counter + 1 "
                    "WHERE id = :id RETURNING revision_counter"
                ),
                {"id": deployed},
            ).scalar_one()
        assert advanced == 8
    finally:
        owner.dispose()
        app.dispose()
        databases.drop_database(urls)
