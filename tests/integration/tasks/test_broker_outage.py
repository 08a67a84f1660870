"""Redis going away and coming back under real workers: no worker exits, nothing stays queued.

Each test runs its own ``redis-server`` (free port, no persistence) so it can kill and restart
it. The first test pins down the kombu behaviour ``occ.tasks.broker_guard`` exists for; the
second runs the broker restart ten times in a row, at different moments (idle, mid claim, mid
effect), with work admitted during the outage.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa
from kombu.connection import Connection
from kombu.entity import Queue
from kombu.messaging import Consumer
from kombu.transport import redis as kombu_redis

from occ.drivers.compute.local import LocalComputeDriver
from occ.state import models
from occ.state.db import Database
from occ.tasks import broker_guard
from tests.integration.tasks import support
from tests.support import audits, processes, servers
from tests.support.processes import wait_for

LEASE_MS = 2_000
CLAIM_INTERVAL_MS = 500
RECOVERY_INTERVAL_MS = 500
REPETITIONS = 10
SLACK_S = 1.5
"""Allowance on top of lease + claim interval: a reconnect attempt (at most 1 s apart) and
scheduling on a loaded two-core machine."""


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[servers.RedisServer]:
    server = servers.RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.close()


def _channels_left_open(server: servers.RedisServer) -> tuple[Connection, kombu_redis.Channel]:
    """A connection whose channel holds an unacknowledged message when Redis dies, after
    Celery's clean-up (``collect``) left that channel open."""
    connection = Connection(server.url)
    with connection.Producer() as producer:
        producer.publish("nudge", routing_key="held", declare=[Queue("held")])
    holding, idle = connection.channel(), connection.channel()
    Consumer(holding, [Queue("held")], callbacks=[lambda body, message: None]).consume()
    connection.drain_events(timeout=5)
    Consumer(idle, [Queue("idle")], callbacks=[lambda body, message: None]).consume()
    with contextlib.suppress(TimeoutError):
        connection.drain_events(timeout=0.2)  # a BRPOP now waits on the socket
    assert holding.qos._delivered
    server.kill()
    connection.collect(socket_timeout=1)
    assert not holding.closed  # collect() stopped at the first channel that raised
    return connection, holding


def _second_close_error(
    channel: kombu_redis.Channel, connection: Connection
) -> BaseException | None:
    with contextlib.suppress(connection.connection_errors):
        channel.close()  # drains the dead BRPOP
    try:
        channel.close()
    except BaseException as exc:
        return exc
    return None


def test_kombu_alone_raises_attribute_error_closing_a_channel_after_collect(
    private_redis: servers.RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the upstream behaviour: when this starts failing, kombu fixed it and the guard can go
    monkeypatch.setattr(kombu_redis.Transport, "Channel", kombu_redis.Channel)
    connection, holding = _channels_left_open(private_redis)
    error = _second_close_error(holding, connection)
    assert isinstance(error, AttributeError)
    assert "hostname" in str(error)
    assert not isinstance(error, connection.connection_errors)  # so Celery's worker exits


def test_the_guard_makes_that_close_a_connection_error(
    private_redis: servers.RedisServer,
) -> None:
    broker_guard.install()
    assert broker_guard.installed()
    connection, holding = _channels_left_open(private_redis)
    error = _second_close_error(holding, connection)
    assert isinstance(error, redis.exceptions.ConnectionError)
    assert isinstance(error, connection.connection_errors)  # Celery ignores it and reconnects


# -- the broker restarted under the fleet, ten times --------------------------------------------


def _not_ready(db: Database, namespace_ids: list[str]) -> list[str]:
    with db.transaction() as session:
        rows = session.execute(
            sa.select(models.Namespace.id, models.Namespace.status).where(
                models.Namespace.id.in_(namespace_ids)
            )
        ).all()
    return sorted(row.id for row in rows if row.status != "ready") or (
        [] if len(rows) == len(namespace_ids) else ["missing"]
    )


def _effects(local_root: Path) -> list[dict[str, object]]:
    return LocalComputeDriver(local_root).effects()


def test_ten_broker_restarts_in_a_row_no_worker_exits_and_everything_completes(
    db: Database,
    admin: str,
    env: dict[str, str],
    fleet: processes.Fleet,
    private_redis: servers.RedisServer,
    local_root: Path,
) -> None:
    env.update(
        {
            "OCC_BROKER_URL": private_redis.url,
            "OCC_CLAIM_INTERVAL_MS": str(CLAIM_INTERVAL_MS),
            "OCC_RECOVERY_INTERVAL_MS": str(RECOVERY_INTERVAL_MS),
            "OCC_DISPATCH_LEASE_MS": str(LEASE_MS),
            "OCC_LOCAL_EFFECT_DELAY_MS": "300",
        }
    )
    fleet.env.update(env)
    fleet_processes = [
        fleet.control_worker(),
        fleet.worker("drivers", concurrency=2),
        fleet.beat(),
    ]
    bound_s = (LEASE_MS + CLAIM_INTERVAL_MS) / 1000 + SLACK_S
    admitted: list[str] = []
    recoveries: list[float] = []
    for repetition in range(REPETITIONS):
        moment = ("idle", "mid claim", "mid effect")[repetition % 3]
        if moment != "idle":
            before = support.admit_namespaces(db, admin, 3)
            admitted += before
            if moment == "mid effect":
                started = len(_effects(local_root))

                def effect_started(started: int = started) -> bool:
                    return len(_effects(local_root)) > started

                wait_for(
                    effect_started,
                    timeout=15,
                    message="an effect to start",
                )
        private_redis.kill()
        during = support.admit_namespaces(db, admin, 2)  # admitted while the broker is gone
        admitted += during
        time.sleep(0.3 + 0.2 * (repetition % 4))  # the outage itself: 0.3 to 0.9 s
        private_redis.start()
        back = time.monotonic()

        def all_ready(admitted: list[str] = admitted) -> bool:
            return not _not_ready(db, admitted)

        wait_for(
            all_ready,
            timeout=bound_s,
            interval=0.05,
            message=f"repetition {repetition} ({moment}): every admitted namespace ready "
            f"within {bound_s} s of the broker's return",
        )
        recoveries.append(time.monotonic() - back)
        exited = [p.name for p in fleet_processes if p.popen.poll() is not None]
        assert not exited, f"repetition {repetition}: {exited} exited"
    completions = audits.passes_ending(db, support.ready_work_ids(admitted), "NAMESPACE_READY")
    assert completions == {f"namespace:{n}:reconcile:ready": 1 for n in admitted}
    for process in fleet_processes:
        assert "Unrecoverable error" not in process.text(), process.name
    print(f"broker restarts: {REPETITIONS}, max recovery {max(recoveries):.2f} s")
