"""The four children of ``occ dev`` and the order they stop in: API, control, drivers, beat.

Builds each ``fleet.ChildSpec`` (argv, environment with the child's own
``PROMETHEUS_MULTIPROC_DIR`` under the home and, when ``OCC_METRICS_PORT`` is set, a listener
port of its own per worker, working directory, the start-up failure statuses) and the
``fleet.StopStage`` list. Stop order: no new claims first (beat, the API, the
control worker), then the driver worker takes what was already dispatched and its warm shutdown
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
from occ.tasks import lifecycle, names
from occ.telemetry import metrics_directory
from occ.web import gunicorn_hooks, serving

API: Final = "api"
CONTROL: Final = "control"
DRIVERS: Final = "drivers"
BEAT: Final = "beat"
WORKERS: Final[tuple[str, ...]] = (CONTROL, DRIVERS)

GUNICORN_STARTUP_FAILURES: Final = frozenset({3, 4})
"""gunicorn's exit statuses when a worker failed to boot (3) or the app failed to load (4)."""


def specs(
    *, layout: home.Home, env: Mapping[str, str], cwd: Path, listener_fd: int
) -> list[fleet.ChildSpec]:
    """The API on the inherited socket ``listener_fd``, both workers and beat, run in ``cwd``."""
    python = sys.executable
    celery = (python, "-m", "celery", "-A", "occ.tasks.app")
    gunicorn = [
        python,
        "-m",
        "gunicorn",
        "occ.web.app:create_app()",
        "--config",
        gunicorn_hooks.CONFIG_OPTION,
        *serving.CLASSES,
        "--bind",
        f"fd://{listener_fd}",
        "--workers",
        "2",
        "--graceful-timeout",
        "10",
    ]
    if package_version("gunicorn") >= (25, 1):
        gunicorn.append("--no-control-socket")  # else one shared socket under $HOME
    children = [
        fleet.ChildSpec(
            API,
            tuple(gunicorn),
            _with_metrics_dir(env, layout, API),
            cwd=cwd,
            pass_fds=(listener_fd,),
            startup_failure_statuses=GUNICORN_STARTUP_FAILURES,
        )
    ]
    # prefork on kombu's polling transports (filesystem) hangs at shutdown in billiard's
    # pool teardown; threads are the other pool the driver tasks support
    drivers_pool = "threads" if env["OCC_BROKER_URL"].startswith("filesystem:") else "prefork"
    for offset, (name, queue, pool) in enumerate(
        ((CONTROL, names.CONTROL_QUEUE, "threads"), (DRIVERS, names.DRIVER_QUEUE, drivers_pool))
    ):
        marker = layout.marker(name)
        argv = (
            *celery,
            "worker",
            "-Q",
            queue,
            "-P",
            pool,
            "-c",
            "2",
            "-n",
            f"{name}@%h",
            "-l",
            "INFO",
            "--without-gossip",
            "--without-mingle",
        )
        children.append(
            fleet.ChildSpec(
                name,
                argv,
                {
                    **_with_metrics_dir(env, layout, name),
                    **_listener_port(env, offset),
                    "OCC_WORKER_READINESS_PATH": str(marker),
                },
                cwd=cwd,
                startup_failure_statuses=frozenset({lifecycle.EXIT_NOT_READY}),
                marker=marker,
            )
        )
    beat_argv = (
        *celery,
        "beat",
        "-S",
        "celery.beat:Scheduler",
        "--schedule",
        str(layout.root / "beat-schedule"),
        "-l",
        "INFO",
    )
    children.append(
        fleet.ChildSpec(
            BEAT,
            beat_argv,
            _with_metrics_dir(env, layout, BEAT),
            cwd=cwd,
            startup_failure_statuses=frozenset({lifecycle.EXIT_NOT_READY}),
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


def stop_stages(drain: Callable[[], None]) -> list[fleet.StopStage]:
    """Beat, API and control first (waiting for control), then ``drain()``, then drivers."""
    return [
        fleet.StopStage(terminate=(BEAT, API, CONTROL), wait_for=(CONTROL,)),
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
