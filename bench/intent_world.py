"""The intent benchmark's scratch database: the rows every phase uses (a Namespace, the repair
lanes' Agents and revisions, Agents to deploy), an emptied queue between phases, finished
history written in bulk, and the vacuum autovacuum would run."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import time
from collections.abc import Iterator
from typing import Final

import sqlalchemy as sa
from sqlalchemy import orm

from bench.support import log
from occ.state.db import Database
from tests.support import databases, queue_steps, rows

REPAIR_LANES: Final = 1_000

_FINISHED: Final = sa.text("""
    WITH lanes AS (
      SELECT r.id, r.namespace_id, r.agent_id, row_number() OVER (ORDER BY r.id) - 1 AS k
        FROM occ.agent_revisions r WHERE r.id = ANY(:revisions)
    )
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, revision_id, actor_id, state, available_at,
       created_at, updated_at, completed_at, reason_code)
    SELECT 'agent_revision:' || r.id || ':maintenance:' || (:first + n), 'revision_maintenance',
           r.namespace_id, r.agent_id, r.id, :actor,
           CASE WHEN n % 20 = 0 THEN 'failed_permanent' ELSE 'succeeded' END,
           clock_timestamp(), clock_timestamp(), clock_timestamp(),
           CAST(:finished_at AS timestamptz),
           CASE WHEN n % 20 = 0 THEN 'RUNTIME_STARTUP_FAILED' ELSE 'REVISION_ACTIVATED' END
      FROM generate_series(1, :count) n JOIN lanes r ON r.k = n % :lanes
""")


@dataclasses.dataclass
class World:
    """The scratch database, as the app and as the owner, and the rows every phase uses."""

    urls: databases.DatabaseUrls
    app: Database
    owner: Database
    actor: str
    namespace_id: str
    repair_revisions: list[str]
    deploy_agents: list[str]
    numbers: dict[str, int] = dataclasses.field(default_factory=dict)


@contextlib.contextmanager
def world(verbose: bool) -> Iterator[World]:
    urls = databases.create_test_database(f"occ_intent_bench_{os.getpid()}")
    app, owner = Database(urls.app, pool_size=8), Database(urls.owner, pool_size=2)
    try:
        started = time.perf_counter()
        with owner.transaction() as session:
            actor = rows.principal(session)
            namespace_id = rows.namespace(session, created_by=actor, status="ready")
            revisions = []
            for n in range(REPAIR_LANES):
                agent_id = rows.agent(session, namespace_id=namespace_id, name=f"r{n}")
                revisions.append(
                    rows.revision(
                        session,
                        namespace_id=namespace_id,
                        agent_id=agent_id,
                        actor_id=actor,
                        number=1,
                    )
                )
            deployers = [
                rows.agent(session, namespace_id=namespace_id, name=f"d{n}") for n in range(100)
            ]
        log(verbose, f"world: {time.perf_counter() - started:.1f} s")
        yield World(urls, app, owner, actor, namespace_id, revisions, deployers)
    finally:
        app.dispose()
        owner.dispose()
        databases.drop_database(urls)


def empty_queue(w: World) -> None:
    """No work rows, and none of the Namespaces ``queue_steps.fill`` made."""
    with w.owner.transaction() as session:
        session.execute(sa.text("DELETE FROM occ.controller_work"))
        session.execute(sa.text("DELETE FROM occ.namespaces WHERE name LIKE 'backlog-%'"))


def vacuum(w: World, table: str = "occ.controller_work") -> None:
    with w.owner.autocommit_connection() as connection:
        databases.psycopg_of(connection).execute(f"VACUUM ANALYZE {table}")


def finish(session: orm.Session, w: World, *, first: int, count: int, ended: dt.datetime) -> None:
    """``count`` finished repairs (one in 20 failed), numbered from ``first``, spread over the
    repair lanes, all ended at ``ended``."""
    session.execute(
        _FINISHED,
        {
            "actor": w.actor,
            "first": first,
            "count": count,
            "finished_at": ended,
            "revisions": w.repair_revisions,
            "lanes": len(w.repair_revisions),
        },
    )


def history_beside_queue(w: World, *, first: int, count: int, ended: dt.datetime) -> None:
    """An empty queue given ``count`` finished rows (``_finish``, written without triggers)
    and 3,000 queued items, then vacuumed."""
    empty_queue(w)
    with w.owner.transaction() as session:
        session.execute(sa.text("SET LOCAL session_replication_role = replica"))
        finish(session, w, first=first, count=count, ended=ended)
        queue_steps.fill(session, w.actor, 3_000)
    vacuum(w)
