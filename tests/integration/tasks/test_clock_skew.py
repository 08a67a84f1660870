"""Workers whose wall clocks are a minute off (libfaketime) still complete every item once:
dispatch expiry and every lease decision are judged on the database clock, never on a message
timestamp from another host's clock. Each skewed process says so once (``clock.skew``)."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from occ.state import models, work_keys
from occ.state.db import Database
from tests.integration.tasks import support
from tests.support import audits, processes, shifted_clocks
from tests.support.processes import wait_for

SKEW_S = 60


def _ready(db: Database, namespace_ids: list[str]) -> bool:
    with db.transaction() as session:
        statuses = session.execute(
            sa.select(models.Namespace.status).where(models.Namespace.id.in_(namespace_ids))
        ).scalars()
        return set(statuses) == {"ready"}


def _skew_events(process: processes.Process) -> list[dict[str, object]]:
    return [
        json.loads(line) for line in process.text().splitlines() if '"event":"clock.skew"' in line
    ]


@pytest.mark.parametrize(
    ("shifted", "offset_s"),
    [("drivers", SKEW_S), ("drivers", -SKEW_S), ("control", SKEW_S), ("control", -SKEW_S)],
)
def test_a_worker_a_minute_off_still_completes_every_item_once(
    db: Database,
    admin: str,
    env: dict[str, str],
    fleet: processes.Fleet,
    shifted: str,
    offset_s: int,
) -> None:
    env["OCC_LOCAL_EFFECT_DELAY_MS"] = "1500"  # each pass renews its 2 s lease
    skewed = shifted_clocks.environment(offset_s)
    control = fleet.control_worker(extra_env=skewed if shifted == "control" else None)
    drivers = fleet.worker(
        "drivers", concurrency=3, extra_env=skewed if shifted == "drivers" else None
    )
    fleet.beat()  # recovery requeues a dispatch that outlived its 3 s lease in the broker
    namespace_ids = support.admit_namespaces(db, admin, 3, prefix="skew")
    processes.nudge(env)

    wait_for(lambda: _ready(db, namespace_ids), timeout=90, message="every namespace to be ready")

    work_ids = [str(work_keys.namespace_ready(n)) for n in namespace_ids]
    assert audits.passes_ending(db, work_ids, "NAMESPACE_READY") == dict.fromkeys(work_ids, 1)
    skewed_process, other = (control, drivers) if shifted == "control" else (drivers, control)
    [event] = _skew_events(skewed_process)  # once, however many measurements followed
    assert abs(int(str(event["skewMs"])) - offset_s * 1000) < 5_000
    assert not _skew_events(other)
