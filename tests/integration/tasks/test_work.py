"""The worker fleet for real: Celery workers and beat as processes, PostgreSQL, Redis.

Every test admits Namespaces and watches the database, the local driver's effect journal and
the processes' JSON logs. Leases are short (2 s) so faults resolve within seconds.
"""

from __future__ import annotations

import collections
import itertools
import os
import signal
import threading
from pathlib import Path
from typing import Any

import redis
import sqlalchemy as sa

from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor
from occ.runtime.composition import queue_policy
from occ.settings.config import Settings
from occ.state import api_keys, models
from occ.state.db import Database
from occ.state.work_keys import WorkKind
from occ.tasks import app as tasks_app
from occ.web.app import create_app
from tests.integration.tasks import support
from tests.support import audits, processes, work_history, work_items
from tests.support.processes import wait_for

LEASE_MS = 2_000


def _settings(env: dict[str, str]) -> Settings:
    return Settings.from_env(env)


def _statuses(db: Database, namespace_ids: list[str]) -> dict[str, str]:
    with db.transaction() as session:
        rows = session.execute(
            sa.select(models.Namespace.id, models.Namespace.status).where(
                models.Namespace.id.in_(namespace_ids)
            )
        ).all()
    return {row.id: row.status for row in rows}


def _wait_ready(db: Database, namespace_ids: list[str], *, timeout: float, what: str) -> None:
    """Wait for every one of ``namespace_ids`` to be ready."""
    wait_for(
        lambda: set(_statuses(db, namespace_ids).values()) == {"ready"},
        timeout=timeout,
        message=f"{what} to become ready",
    )


def _lifecycle_audits(db: Database, namespace_id: str) -> list[str]:
    with db.transaction() as session:
        return list(
            session.execute(
                sa.select(models.AuditEvent.outcome).where(
                    models.AuditEvent.namespace_id == namespace_id,
                    models.AuditEvent.action == "namespaces.lifecycle.ensure",
                )
            ).scalars()
        )


def _completions(db: Database, namespace_id: str) -> int:
    work_id = f"namespace:{namespace_id}:reconcile:ready"
    return audits.count(
        db,
        models.AuditEvent.work_id == work_id,
        models.AuditEvent.action == "reconcile",
        models.AuditEvent.details["reasonCode"].astext == "NAMESPACE_READY",
    )


def _assert_exactly_once(db: Database, namespace_ids: list[str]) -> None:
    for namespace_id in namespace_ids:
        assert _lifecycle_audits(db, namespace_id) == ["success"], namespace_id
        assert _completions(db, namespace_id) == 1, namespace_id


def _effects_do_not_overlap(local_root: Path) -> dict[str, list[dict[str, Any]]]:
    by_work: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for effect in _ended(local_root):
        by_work[str(effect["workId"])].append(effect)
    for work_id, effects in by_work.items():
        effects.sort(key=lambda e: float(e["startedAt"]))
        for before, after in itertools.pairwise(effects):
            assert float(before["endedAt"]) <= float(after["startedAt"]), (
                f"{work_id}: effects by {before['token']} and {after['token']} overlap"
            )
    return by_work


def _ended(local_root: Path) -> list[dict[str, Any]]:
    return [e for e in LocalComputeDriver(local_root).effects() if e["phase"] == "ended"]


def _json_events(process: processes.Process, event: str) -> list[str]:
    return [line for line in process.text().splitlines() if f'"event":"{event}"' in line]


# -- tests -------------------------------------------------------------------------------------


def test_admission_reaches_ready_through_the_nudge_without_waiting_for_beat(
    db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet
) -> None:
    fleet.control_worker()
    fleet.worker("drivers")
    fleet.beat()  # claims only every 60 s: readiness within seconds proves the nudge
    settings = _settings(env)
    app = create_app(settings)
    client = app.test_client()
    with db.transaction() as session:
        key = api_keys.mint(session, principal_id=admin, pepper=settings.api_key_pepper)
    response = client.post(
        "/v1/namespaces",
        json={"name": "nudged"},
        headers={"Authorization": f"Bearer {key.plaintext}"},
    )
    assert response.status_code == 201 and response.json is not None
    namespace_id = response.json["data"]["id"]
    _wait_ready(db, [namespace_id], timeout=15, what="the namespace")
    _assert_exactly_once(db, [namespace_id])
    app.extensions["occ"].runtime.database.dispose()


def test_a_redelivered_run_work_message_runs_the_effect_once(
    db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    fleet.worker("drivers", concurrency=2)
    [namespace_id] = support.admit_namespaces(db, admin, 1)
    settings = _settings(env)
    claims = executor.claim_batch(db, queue_policy(settings), max_in_flight=10)
    assert [c.owner.namespace_id for c in claims] == [namespace_id]
    celery = tasks_app.create(settings)
    for _ in range(2):  # the broker delivers the same message twice
        celery.send_task(
            tasks_app.RUN_WORK,
            args=[claims[0].work_id, str(claims[0].token)],
            queue=tasks_app.DRIVER_QUEUE,
        )
    _wait_ready(db, [namespace_id], timeout=15, what="the namespace")
    wait_for(lambda: len(_ended(local_root)) >= 1, timeout=5, message="the effect journal")
    assert len(LocalComputeDriver(local_root).effects()) == 2  # one effect: started, ended
    assert len(_ended(local_root)) == 1
    _assert_exactly_once(db, [namespace_id])


def test_broker_loss_while_queued_and_in_flight_still_completes_everything_once(
    db: Database,
    admin: str,
    env: dict[str, str],
    fleet: processes.Fleet,
    broker_url: str,
    local_root: Path,
) -> None:
    env["OCC_CLAIM_INTERVAL_MS"] = "500"
    env["OCC_LOCAL_EFFECT_DELAY_MS"] = "400"
    fleet.control_worker()
    fleet.worker("drivers", concurrency=2)
    namespace_ids = support.admit_namespaces(db, admin, 12)
    processes.nudge(env)
    wait_for(
        lambda: len(LocalComputeDriver(local_root).effects()) >= 1,
        timeout=15,
        message="the first effects",
    )
    redis.Redis.from_url(broker_url).flushdb()  # queued dispatches and nudges are gone
    fleet.beat()
    _wait_ready(
        db, namespace_ids, timeout=60, what="every namespace (the broker lost its messages)"
    )
    _assert_exactly_once(db, namespace_ids)
    _effects_do_not_overlap(local_root)


def test_two_beats_and_four_workers_never_reconcile_one_item_twice_at_once(
    db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    env["OCC_CLAIM_INTERVAL_MS"] = "300"
    env["OCC_LOCAL_EFFECT_DELAY_MS"] = "200"
    fleet.control_worker()
    for number in range(4):
        fleet.worker(f"drivers{number}")
    fleet.beat("beat1")
    fleet.beat("beat2")
    namespace_ids = support.admit_namespaces(db, admin, 16)
    _wait_ready(db, namespace_ids, timeout=90, what="every namespace")
    _assert_exactly_once(db, namespace_ids)
    by_work = _effects_do_not_overlap(local_root)
    assert set(by_work) == {f"namespace:{n}:reconcile:ready" for n in namespace_ids}


def test_kill_9_mid_effect_another_worker_finishes_after_the_lease(
    db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    doomed, namespace_id = _effect_in_flight(
        db, admin, env, fleet, local_root, worker="doomed", delay_ms=5000
    )
    doomed.kill_group()  # kill -9 of the worker and its pool process mid-effect
    env["OCC_LOCAL_EFFECT_DELAY_MS"] = "100"
    fleet.worker("rescuer")
    fleet.beat()
    _wait_ready(db, [namespace_id], timeout=30, what="the namespace (after the takeover)")
    _assert_exactly_once(db, [namespace_id])
    effects = LocalComputeDriver(local_root).effects()
    started = {e["token"] for e in effects if e["phase"] == "started"}
    ended = {e["token"] for e in effects if e["phase"] == "ended"}
    assert len(started) == 2 and len(ended) == 1  # the killed effect never finished
    assert ended < started


def test_a_stopped_worker_past_its_lease_publishes_nothing_after_it_resumes(
    db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    frozen, namespace_id = _effect_in_flight(
        db, admin, env, fleet, local_root, worker="frozen", delay_ms=1500
    )
    os.killpg(frozen.pid, signal.SIGSTOP)
    try:
        fleet.worker("successor")
        fleet.beat()
        _wait_ready(db, [namespace_id], timeout=30, what="the namespace (by the successor)")
    finally:
        os.killpg(frozen.pid, signal.SIGCONT)
    wait_for(
        lambda: _json_events(frozen, "worker.error"),
        timeout=20,
        message="the resumed worker to notice its lost claim",
    )
    [lost] = [line for line in _json_events(frozen, "worker.error") if "CLAIM_LOST" in line]
    assert '"cause":"CLAIM_LEASE_LAPSED"' in lost or '"cause":"CLAIM_RENEWAL_' in lost
    assert not _json_events(frozen, "worker.completed")
    _assert_exactly_once(db, [namespace_id])


def test_warm_shutdown_releases_the_claim_with_the_attempt_refunded(
    db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet, local_root: Path
) -> None:
    leaving, namespace_id = _effect_in_flight(
        db, admin, env, fleet, local_root, worker="leaving", delay_ms=30000
    )
    work_id = f"namespace:{namespace_id}:reconcile:ready"
    leaving.signal(signal.SIGTERM)  # warm shutdown of the worker's main process

    def released() -> list[dict[str, object]]:
        with db.transaction() as session:
            return list(
                session.execute(
                    sa.select(models.AuditEvent.details).where(
                        models.AuditEvent.work_id == work_id,
                        models.AuditEvent.details["reasonCode"].astext == "CLAIM_RELEASED",
                    )
                ).scalars()
            )

    # the release is its evidence row: queued again with the attempt refunded (the fleet may
    # claim the item again right after, so the row itself is not stable)
    [evidence] = wait_for(released, timeout=15, message="the claim to be released")
    assert evidence["attemptCount"] == 0
    assert leaving.popen.wait(20) == 0
    assert _json_events(leaving, "worker.pass-interrupted")


def _effect_in_flight(
    db: Database,
    admin: str,
    env: dict[str, str],
    fleet: processes.Fleet,
    local_root: Path,
    *,
    worker: str,
    delay_ms: int,
) -> tuple[processes.Process, str]:
    """One Namespace admitted and its effect started (and held for ``delay_ms``) on a new
    driver worker named ``worker``; that worker and the Namespace's id."""
    env["OCC_LOCAL_EFFECT_DELAY_MS"] = str(delay_ms)
    fleet.control_worker()
    process = fleet.worker(worker)
    [namespace_id] = support.admit_namespaces(db, admin, 1)
    processes.nudge(env)
    work_id = f"namespace:{namespace_id}:reconcile:ready"
    wait_for(
        lambda: _effect_started(local_root, work_id), timeout=15, message="the effect to start"
    )
    return process, namespace_id


def _effect_started(local_root: Path, work_id: str) -> bool:
    return any(
        e["workId"] == work_id and e["phase"] == "started"
        for e in LocalComputeDriver(local_root).effects()
    )


def _state(db: Database, work_id: str) -> tuple[str, bool]:
    with db.transaction() as session:
        row = session.get(models.ControllerWork, work_id)
        return ("missing", False) if row is None else (row.state, row.started_at is not None)


def test_a_worker_refuses_to_start_before_bootstrap(
    db: Database, env: dict[str, str], fleet: processes.Fleet, tmp_path: Path
) -> None:
    # no Installation in the database: after a short wait start-up fails, never reporting ready
    fleet.env["OCC_STARTUP_WAIT_MS"] = "1000"
    worker = fleet.worker("early", ready=False)
    assert worker.popen.wait(60) == 3  # lifecycle.EXIT_NOT_READY
    assert not (tmp_path / "early.ready").exists()
    [event] = _json_events(worker, "worker.startup-error")
    assert '"error":"DependencyUnavailable"' in event
    assert "not bootstrapped" in event


def test_beat_prunes_expired_history_and_keeps_what_is_read(
    db: Database, owner_db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet
) -> None:
    [namespace_id] = support.admit_namespaces(db, admin, 1)
    agent = work_history.Agent(owner_db, namespace_id, admin, "pruned")
    revision = agent.revision()
    agent.activate(revision)
    repairs = [agent.repaired(revision, second, days_ago=8 + second / 100) for second in range(5)]
    env.update(OCC_PRUNE_INTERVAL_MS="300")
    fleet.control_worker()
    fleet.beat()

    def left() -> set[str]:
        return {
            item.id for item in work_items.matching(db, models.ControllerWork.agent_id == agent.id)
        }

    wait_for(lambda: left() == {repairs[0]}, timeout=15, message="the expired repairs to go")


def test_flower_sees_the_work_with_its_kind_and_owner_and_not_the_ticks(
    db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet
) -> None:
    fleet.control_worker(events=True)
    fleet.worker("drivers", events=True)
    celery = tasks_app.create(_settings(env))
    received: list[dict[str, Any]] = []
    succeeded: list[str] = []
    probes: list[str] = []

    def on_event(event: dict[str, Any]) -> None:
        if event["type"] == "task-received":
            received.append(event)
        elif event["type"] == "task-succeeded":
            succeeded.append(str(event["uuid"]))
        elif event["type"] == "occ-test-probe":
            probes.append(str(event["type"]))

    with celery.connection() as connection:
        receiver = celery.events.Receiver(connection, handlers={"*": on_event})
        draining = threading.Thread(
            target=lambda: receiver.capture(limit=None, timeout=None, wakeup=False), daemon=True
        )
        draining.start()
        try:
            with celery.events.default_dispatcher() as dispatcher:

                def probed() -> bool:  # the event queue is bound once a probe comes back
                    dispatcher.send("occ-test-probe")
                    return bool(probes)

                wait_for(probed, timeout=30, message="the event receiver to listen")
            [namespace_id] = support.admit_namespaces(db, admin, 1)
            celery.send_task(tasks_app.CLAIM, queue=tasks_app.CONTROL_QUEUE)
            celery.send_task(tasks_app.RECOVER_STALE, queue=tasks_app.CONTROL_QUEUE)
            _wait_ready(db, [namespace_id], timeout=30, what="the namespace")
            wait_for(
                lambda: any(
                    e["name"] == tasks_app.RUN_WORK and e["uuid"] in succeeded for e in received
                ),
                timeout=30,
                message="the work task's events",
            )
        finally:
            receiver.should_stop = True
            draining.join(timeout=10)
    assert {event["name"] for event in received} == {tasks_app.RUN_WORK}  # no claim, no recovery
    [work] = [event for event in received if event["name"] == tasks_app.RUN_WORK]
    assert f"namespace:{namespace_id}:reconcile:ready" in work["args"]
    assert "<dispatch token>" in work["args"]
    assert f"'kind': '{WorkKind.NAMESPACE_READY}'" in work["kwargs"]
    with db.snapshot() as session:
        name = session.scalar(
            sa.select(models.Namespace.name).where(models.Namespace.id == namespace_id)
        )
    assert f"'namespace': '{name}'" in work["kwargs"]  # its name, beside its id
    assert f"'namespaceId': '{namespace_id}'" in work["kwargs"]
