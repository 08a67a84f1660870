"""A rolling upgrade for real: the new release's API and control worker on one database with a
driver worker of the release before, then a new driver worker beside it.

The old worker defers every payload newer than it reads (``WORK_VERSION_UNSUPPORTED``, the
attempt refunded, no ``KeyError``, nothing failed); once a new driver worker joins, every item
completes exactly once, and the old worker never ran one (docs/operations.md, Rolling
upgrades)."""

from __future__ import annotations

from occ.state import models
from occ.state.db import Database
from occ.tasks import names
from tests.integration.tasks import support
from tests.support import audits, older_release, processes, work_items
from tests.support.processes import wait_for

CODE = "WORK_VERSION_UNSUPPORTED"


def _states(db: Database, work_ids: list[str]) -> dict[str, tuple[str, int]]:
    items = work_items.matching(db, models.ControllerWork.id.in_(work_ids))
    return {item.id: (item.state, item.attempt_count) for item in items}


def test_old_driver_workers_defer_newer_payloads_until_a_new_worker_runs_them(
    db: Database, admin: str, env: dict[str, str], fleet: processes.Fleet
) -> None:
    assert names.PAYLOAD_VERSION > 1  # this release writes payloads the older one cannot read
    env["OCC_CLAIM_INTERVAL_MS"] = "500"
    fleet.control_worker()  # the new release claims and dispatches
    old = fleet.worker("old-drivers", extra_env=older_release.environment())
    fleet.beat()
    work_ids = support.ready_work_ids(support.admit_namespaces(db, admin, 3, prefix="mixed"))
    processes.nudge(env)

    wait_for(
        lambda: set(audits.passes_ending(db, work_ids, CODE)) == set(work_ids),
        timeout=60,
        message="the old worker to defer every item",
    )
    states = _states(db, work_ids)
    assert all(state in ("queued", "claimed") for state, _ in states.values()), states
    assert all(attempts <= 1 for _, attempts in states.values()), states  # refunded
    assert '"event":"worker.completed"' not in old.text()
    assert "KeyError" not in old.text() and "Traceback" not in old.text()

    new = fleet.worker("new-drivers")
    wait_for(
        lambda: audits.passes_ending(db, work_ids, "NAMESPACE_READY") == dict.fromkeys(work_ids, 1),
        timeout=90,
        message="the new worker to complete every item once",
    )
    assert {state for state, _ in _states(db, work_ids).values()} == {"succeeded"}
    assert '"event":"worker.completed"' not in old.text()  # never ran a newer payload
    assert new.text().count('"event":"worker.completed"') == len(work_ids)
    assert f'"code":"{CODE}"' in old.text() and '"version":2' in old.text()
