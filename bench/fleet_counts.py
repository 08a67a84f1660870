"""What the fleet benchmarks read from the database itself: rows and commits as PostgreSQL's
statistics count them, the kubernetes fleet's observation cursor, and work rows counted."""

from __future__ import annotations

import time
from typing import Final

import sqlalchemy as sa

from occ.state import models
from occ.state.db import Database

_ROWS: Final = sa.text("""
    SELECT coalesce(sum(n_tup_ins), 0) AS inserted,
           coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) AS written
      FROM pg_stat_user_tables WHERE schemaname = 'occ'
""")
_COMMITS: Final = sa.text(
    "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
)


def database_counts(owner: Database) -> tuple[int, int, int]:
    """(rows inserted, rows written, transactions committed) so far, as the statistics say."""
    time.sleep(1.2)  # backends report their counts at most once a second
    with owner.transaction() as session:
        session.execute(sa.text("SELECT pg_stat_clear_snapshot()"))
        rows = session.execute(_ROWS).one()
        commits = session.execute(_COMMITS).scalar_one()
    return int(rows.inserted), int(rows.written), int(commits)


def set_cursor(owner: Database, behind_ms: int) -> None:
    """Put the kubernetes fleet's cursor ``behind_ms`` behind now (made if missing)."""
    with owner.transaction() as session:
        session.execute(
            sa.text("""
                INSERT INTO occ.observer_cursors (compute_driver, observed_until)
                VALUES ('kubernetes', clock_timestamp() - :behind * interval '1 millisecond')
                ON CONFLICT (compute_driver) DO UPDATE SET observed_until = excluded.observed_until
            """),
            {"behind": behind_ms},
        )


def work_rows(database: Database, *conditions: sa.ColumnElement[bool]) -> int:
    """How many work items meet every condition (on ``models.ControllerWork`` columns; none:
    the whole table)."""
    with database.transaction() as session:
        return int(
            session.execute(
                sa.select(sa.func.count()).select_from(models.ControllerWork).where(*conditions)
            ).scalar_one()
        )
