"""The four children of ``occ dev`` and the order they stop in: API, control, drivers, beat.

Builds each ``fleet.ChildSpec`` from the process table's ``occ dev`` runs
(``occ.process_table.table``): the command line, with its placeholders filled and run by this
interpreter (``python -m gunicorn``, ``python -m celery``); the environment, with the child's
own ``PROMETHEUS_MULTIPROC_DIR`` under the home and, when ``OCC_METRICS_PORT`` is set, a
listener port of its own per worker; the working directory and the start-up failure statuses.
The children run in the home's ``run`` directory, so ``anchored`` makes the paths of this
machine that the environment names relative to where ``occ dev`` started absolute first.
Also the ``fleet.StopStage`` list. Stop order: no new claims first (beat, the API, the control
worker), then the driver worker takes what was already dispatched and its warm shutdown
releases every claim it holds. Nothing here starts a process.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from occ.dev import fleet, home
from occ.process_table import table
from occ.tasks import lifecycle
from occ.telemetry import metrics_directory

_DEV: Final = table.Layout.DEV
API: Final = table.API.runs[_DEV].name
CONTROL: Final = table.CONTROL.runs[_DEV].name
DRIVERS: Final = table.DRIVERS.runs[_DEV].name
BEAT: Final = table.BEAT.runs[_DEV].name
WORKERS: Final[tuple[str, ...]] = (CONTROL, DRIVERS)

GUNICORN_STARTUP_FAILURES: Final = frozenset({3, 4})
"""gunicorn's exit statuses when a worker failed to boot (3) or the app failed to load (4)."""


LOCAL_PATHS: Final = frozenset(
    {
        "OCC_CONFIG_PATH",
        "OCC_KUBERNETES_KUBECONFIG",
        "OCC_ACCOUNT_BACKEND_ROOT",
        "OCC_DEVELOPMENT_CONFIGURATION_ROOT",
        "OCC_IAM_IDENTITY_ROOT",
        "OCC_LOCAL_ROOT",
        "OCC_WORKER_READINESS_PATH",
    }
)
"""The settings' variables that name a path on this machine (``OCC_SSH_ROOT`` names one on
the SSH hosts), besides every secret's ``OCC_*_FILE``."""


def anchored(env: Mapping[str, str], directory: Path) -> dict[str, str]:
    """``env`` with each relative path of this machine made absolute against ``directory``."""
    return {
        name: str(directory / value) if _names_local_path(name) and value else value
        for name, value in env.items()
    }


def _names_local_path(variable: str) -> bool:
    return variable in LOCAL_PATHS or (variable.startswith("OCC_") and variable.endswith("_FILE"))


def specs(
    *,
    layout: home.Home,
    env: Mapping[str, str],
    cwd: Path,
    listener_fd: int,
    task_events: bool = False,
) -> list[fleet.ChildSpec]:
    """The API on the inherited socket ``listener_fd``, both workers and beat, run in ``cwd``;
    ``task_events``: the workers send task events from their start (for Flower)."""
    # prefork on kombu's polling transports (filesystem) hangs at shutdown in billiard's
    # pool teardown; threads are the other pool the driver tasks support
    polling = env["OCC_BROKER_URL"].startswith("filesystem:")
    values = {
        "listener_fd": str(listener_fd),
        "schedule": str(layout.root / "beat-schedule"),
        "drivers_pool": "threads" if polling else table.DRIVER_WORKER.pool,
    }
    children = []
    for process, run in table.runs(_DEV):
        argv = (sys.executable, "-m", *run.filled(values))
        environment = _with_metrics_dir(env, layout, run.name)
        failures = frozenset({lifecycle.EXIT_NOT_READY})
        marker = None
        pass_fds: tuple[int, ...] = ()
        if process is table.API:
            if package_version("gunicorn") >= (25, 1):
                argv += ("--no-control-socket",)  # else one shared socket under $HOME
            failures, pass_fds = GUNICORN_STARTUP_FAILURES, (listener_fd,)
        if process.worker is not None:
            if task_events:
                argv += (table.TASK_EVENTS,)
            marker = layout.marker(run.name)
            environment.update(_listener_port(env, WORKERS.index(run.name)))
            environment["OCC_WORKER_READINESS_PATH"] = str(marker)
        children.append(
            fleet.ChildSpec(
                run.name,
                argv,
                environment,
                cwd=cwd,
                pass_fds=pass_fds,
                startup_failure_statuses=failures,
                marker=marker,
            )
        )
    return children


def _with_metrics_dir(env: Mapping[str, str], layout: home.Home, name: str) -> dict[str, str]:
    """``env`` with the child's own multiprocess directory: one per program, never shared."""
    return {**env, metrics_directory.VARIABLE: str(layout.metrics_dir(name))}


def _listener_port(env: Mapping[str, str], offset: int) -> dict[str, str]:
    """The worker listener's port: ``OCC_METRICS_PORT`` for control, the next one for drivers."""
    port = env.get("OCC_METRICS_PORT", "")
    return {"OCC_METRICS_PORT": str(int(port) + offset)} if port.isdigit() else {}


def stop_stages(
    drain: Callable[[], None], *, beside: tuple[str, ...] = ()
) -> list[fleet.StopStage]:
    """Beat, API and control (and the helpers ``beside``, such as Flower) first, waiting for
    control, then ``drain()``, then drivers."""
    return [
        fleet.StopStage(terminate=(BEAT, API, CONTROL, *beside), wait_for=(CONTROL,)),
        fleet.StopStage(terminate=(DRIVERS,), before=drain),
    ]


def package_version(distribution: str) -> tuple[int, ...]:
    """The leading numeric parts of an installed distribution's version (``()`` if absent)."""
    try:
        text = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ()
    parts = []
    for part in text.split(".")[:3]:
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)
