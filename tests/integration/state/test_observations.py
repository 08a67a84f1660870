"""The observation schedule on PostgreSQL: windows sized to a limit cover the running fleet once
per interval, no Agent twice; a held cursor is skipped, not waited for; a cursor far behind
jumps to one interval behind."""

from __future__ import annotations

import datetime as dt
import math
import time

import sqlalchemy as sa

from occ.state import models, observations
from occ.state.db import Database
from tests.support import fleets

INTERVAL_MS = 60_000


def _rewind(owner_db: Database, seconds: float) -> None:
    with owner_db.transaction() as session:
        session.execute(
            sa.update(models.ObserverCursor).values(
                observed_until=sa.func.clock_timestamp() - dt.timedelta(seconds=seconds)
            )
        )


def _take(db: Database, limit: int) -> tuple[observations.Window, list[str]]:
    with db.transaction() as session:
        window = observations.claim_window(session, "local", interval_ms=INTERVAL_MS, limit=limit)
    assert window is not None
    with db.snapshot() as session:
        return window, [due.revision.agent_id for due in observations.due(session, "local", window)]


def test_windows_sized_to_a_limit_cover_the_fleet_once(
    db: Database, owner_db: Database, actor: str
) -> None:
    fleets.running_agents(owner_db, actor, 200, driver="local", per_namespace=50)
    _first, _seen = _take(db, limit=1)  # opens the cursor an interval behind
    _rewind(owner_db, INTERVAL_MS / 1000)

    taken: list[str] = []
    windows = 0
    started = time.monotonic()
    while True:
        window, agents = _take(db, limit=40)
        windows += 1
        taken.extend(agents)
        if window.caught_up:
            break
        assert windows < 50
    elapsed_s = time.monotonic() - started

    assert len(set(taken)) == 200  # every Agent
    # none twice, but for the phases that came round again while the windows were taken (the
    # windows end at the database's now, which moved on by elapsed_s past one interval)
    came_round = math.ceil(200 * elapsed_s / (INTERVAL_MS / 1000)) + 1
    assert len(taken) - 200 <= came_round, (len(taken), elapsed_s)
    assert 4 <= windows <= 12  # about 200 / 40, however the phases fell


def test_a_held_cursor_is_skipped_and_a_cursor_far_behind_catches_up_one_interval(
    db: Database, owner_db: Database, actor: str
) -> None:
    fleets.running_agents(owner_db, actor, 20, driver="local", per_namespace=20)
    _take(db, limit=1_000)
    _rewind(owner_db, 10 * INTERVAL_MS / 1000)

    with db.transaction() as holder:
        assert observations.claim_window(holder, "local", interval_ms=INTERVAL_MS, limit=1_000)
        with db.transaction() as other:
            assert (
                observations.claim_window(other, "local", interval_ms=INTERVAL_MS, limit=1_000)
                is None
            )
    _rewind(owner_db, 10 * INTERVAL_MS / 1000)
    window, agents = _take(db, limit=1_000)

    assert window.lag_s >= 9 * INTERVAL_MS / 1000
    assert (window.now - window.start) <= dt.timedelta(milliseconds=INTERVAL_MS)
    assert len(agents) == 20 and window.caught_up
    with db.snapshot() as session:
        lag = observations.lag_s(session, "local")
    assert lag is not None and lag < 5
