"""Keyset windows: a repository reads the rows after a key, at most the limit, by index."""

from __future__ import annotations

from typing import cast

import sqlalchemy as sa

from occ.foundation import ids
from occ.state import configurations, keyset, models
from occ.state.db import Database
from tests.support import rows


def many_configurations(db: Database, namespace_id: str, count: int) -> None:
    """``count`` Configurations in one statement."""
    with db.transaction() as session:
        session.execute(
            sa.text(
                "INSERT INTO occ.configurations (id, namespace_id, name, document) "
                "SELECT 'cfg_' || gen_random_uuid(), :namespace, 'c' || n, '{}'::jsonb "
                "FROM generate_series(1, :count) AS n"
            ),
            {"namespace": namespace_id, "count": count},
        )


def test_a_window_of_a_long_list_reads_its_rows_only_through_the_index(
    db: Database, owner_db: Database
) -> None:
    with db.transaction() as session:
        creator = rows.principal(session)
        namespace_id = rows.namespace(session, created_by=creator, status="ready")
    many_configurations(db, namespace_id, 5000)
    with owner_db.transaction() as session:
        session.execute(sa.text("ANALYZE occ.configurations"))
    with db.transaction() as session:
        everything = configurations.list_in(session, namespace_id)
        first = configurations.list_in(session, namespace_id, keyset.Window(limit=101))
        after = keyset.BY_CREATION.key(everything[2499])
        middle = configurations.list_in(session, namespace_id, keyset.Window(after, 10))
        table = cast(sa.Table, models.Configuration.__table__)
        query = keyset.BY_CREATION.window(
            sa.select(table).where(table.c.namespace_id == namespace_id),
            table,
            keyset.Window(after, 10),
        )
        compiled = query.compile(dialect=session.get_bind().dialect)
        explained = session.connection().exec_driver_sql(f"EXPLAIN {compiled}", compiled.params)
        plan = "\n".join(row[0] for row in explained)
    assert len(everything) == 5000
    assert first == everything[:101]
    assert middle == everything[2500:2510]
    assert "configurations_namespace_created" in plan and "Sort" not in plan, plan
    assert ids.is_valid("configuration", first[0].id)


def test_revisions_window_newest_first() -> None:
    order = keyset.NEWEST_REVISION_FIRST
    assert order.admits((-3,)) and not order.admits((True,)) and not order.admits((2**70,))
    assert keyset.BY_CREATION.admits((0, "cfg_x")) and not keyset.BY_CREATION.admits((-1, "x"))
    assert not keyset.BY_CREATION.admits((10**20, "x")) and not keyset.BY_CREATION.admits((1,))
