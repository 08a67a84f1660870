"""A real driver worker (prefork) over its metrics directory: stale files of a previous run
are gone before it serves, exiting pool processes are marked dead, and a second program given
the same directory does not start."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from occ.controller import installation
from occ.state.db import Database
from occ.tasks import lifecycle
from occ.telemetry import metrics, metrics_directory
from tests.support import metric_files, processes, servers
from tests.support.processes import wait_for


def _plant(path: Path, metric: str, value: float) -> None:
    metric_files.plant(path, metric, value, help_text="planted")


def _pool(pid: int) -> list[int]:
    """The pids of ``pid``'s children."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            lines = status.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        if f"PPid:\t{pid}" in lines:
            found.append(int(status.parent.name))
    return found


def test_the_driver_worker_owns_a_clean_directory_and_marks_its_pool_dead(
    db: Database, env: dict[str, str], fleet: processes.Fleet, tmp_path: Path
) -> None:
    installation.bootstrap_installation(db, name="metrics", admin_name="admin")
    directory = tmp_path / "metrics" / "drivers"
    directory.mkdir(parents=True)
    _plant(directory / "counter_4194003.db", "occ_claims_lost_total", 1000.0)
    port = servers.free_port()
    env.update({metrics_directory.VARIABLE: str(directory), "OCC_METRICS_PORT": str(port)})
    worker = fleet.worker("drivers", concurrency=2)
    assert not (directory / "counter_4194003.db").exists()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        exposition = response.read().decode()
    assert "occ_claims_lost_total 0.0" in exposition.splitlines()
    assert f'version="{metrics.version()}"' in exposition

    # a second program pointed at the same directory refuses to start, and clears nothing
    before = sorted(path.name for path in directory.glob("*.db"))
    control = fleet.worker("control", queues="occ.control", pool="threads", ready=False)
    wait_for(lambda: not control.alive(), timeout=60, message="the second program to stop")
    assert control.popen.returncode == lifecycle.EXIT_NOT_READY, control.tail()
    assert "in use by another program" in control.text()
    assert sorted(path.name for path in directory.glob("*.db")) == before

    pool = _pool(worker.pid)
    assert len(pool) == 2, pool
    for pid in pool:
        _plant(directory / f"gauge_livesum_{pid}.db", "occ_probe", 1.0)
    assert worker.stop(timeout=30) == 0, worker.tail()
    assert [pid for pid in pool if (directory / f"gauge_livesum_{pid}.db").exists()] == []
