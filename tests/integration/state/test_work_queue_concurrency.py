"""Lanes under concurrency: 16 claimers, 2,000 items over 50 Agent lanes, no overlap per lane."""

from __future__ import annotations

import collections
import datetime as dt
import itertools
import random
import threading
import time

import sqlalchemy as sa

from occ.state import models, values, work_claims, work_queue
from occ.state.db import Database
from tests.support import queue_steps, rows

THREADS = 16
LANES = 50
ITEMS = 2_000


def _seed(db: Database) -> dict[str, str]:
    """Enqueue ITEMS revision work items over LANES Agents; returns work id -> lane."""
    lanes: dict[str, str] = {}
    with db.transaction() as session:
        actor = rows.principal(session)
        namespace_id = rows.namespace(session, created_by=actor, status="ready")
        agents = [
            rows.agent(session, namespace_id=namespace_id, name=f"agent-{n}") for n in range(LANES)
        ]
    per_lane = ITEMS // LANES
    for number in range(1, per_lane + 1):
        with db.transaction() as session:
            for agent_id in agents:
                work_id = queue_steps.enqueue_revision(
                    session, namespace_id, agent_id, actor, number
                )
                lanes[work_id] = agent_id
    return lanes


def test_claimers_never_overlap_in_a_lane_and_finish_everything_once(
    db: Database,
    policy: values.QueuePolicy,
) -> None:
    lanes = _seed(db)
    intervals: dict[str, list[tuple[dt.datetime, dt.datetime, str]]] = collections.defaultdict(list)
    completed: list[str] = []
    failures: list[BaseException] = []
    lock = threading.Lock()
    deadline = time.monotonic() + 240

    def claimer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while time.monotonic() < deadline:
                with lock:
                    if len(completed) >= ITEMS:
                        return
                with db.transaction() as session:
                    # a claimer never queues behind another claimer or a running item: a lock
                    # wait longer than 50 ms errors. (Sub-millisecond waits do occur, rarely:
                    # PostgreSQL's own hand-offs while a row a claimer just looked at commits.)
                    session.execute(sa.text("SET LOCAL lock_timeout = '50ms'"))
                    claims = work_claims.claim(session, policy, limit=rng.randint(1, 8))
                if not claims:
                    time.sleep(0.001)
                    continue
                for dispatch in claims:
                    with db.transaction() as session:
                        run = work_queue.start(session, policy, dispatch)
                    assert run is not None
                    with db.transaction() as session:
                        item = work_queue.complete(session, run, code="REVISION_ACTIVATED")
                    assert item.completed_at is not None
                    with lock:
                        completed.append(run.work_id)
                        intervals[lanes[run.work_id]].append(
                            (dispatch.claimed_at, item.completed_at, run.work_id)
                        )
        except BaseException as exc:  # reported by the test thread
            with lock:
                failures.append(exc)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [
        (repr(f), repr(f.__cause__), str(getattr(f.__cause__, "statement", ""))[:300])
        for f in failures
    ] == []
    assert len(completed) == ITEMS
    assert sorted(completed) == sorted(lanes)  # every item exactly once

    for lane, spans in intervals.items():
        spans.sort()
        for (_, end, before), (start, _, after) in itertools.pairwise(spans):
            assert end < start, f"lane {lane}: {before} and {after} overlap"

    with db.transaction() as session:
        states = collections.Counter(
            session.execute(sa.select(models.ControllerWork.state)).scalars()
        )
        completions = collections.Counter(
            session.execute(
                sa.select(models.AuditEvent.work_id).where(
                    models.AuditEvent.action == "reconcile",
                    models.AuditEvent.details["reasonCode"].astext == "REVISION_ACTIVATED",
                )
            ).scalars()
        )
    assert states == {"succeeded": ITEMS}
    assert set(completions.values()) == {1}
    assert len(completions) == ITEMS
