"""The table of occ's processes: what each one is for and how every layout runs it.

One ``Process`` per kind of process (release, API, control worker, driver worker, beat, Flower,
and compose's docker log gate)
holds its role, the queue, pool and node name of a Celery worker, and one ``Run`` per
``Layout`` that runs it: the layout's name for it and the command line. The layouts are the
``Procfile`` (Heroku, honcho), ``docker-compose.yml`` (whose ``api`` command is also the image's
default), ``deploy/kubernetes`` (through the thin ``occ`` wrappers) and ``occ dev``'s children.

The Procfile and the process tables of the documentation are generated from this table
(``make generate``), ``occ dev`` builds its children from it, and tests check the compose file,
the image and the Kubernetes manifests against it: a command changes here, then in the files.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from occ.process_table import shell
from occ.tasks import names
from occ.telemetry import metrics_directory
from occ.web import gunicorn_hooks, serving


class Layout(enum.StrEnum):
    """A way of running occ's processes; the value is how the documentation names it."""

    PROCFILE = "Procfile"
    COMPOSE = "compose"
    KUBERNETES = "Kubernetes"
    DEV = "occ dev"


SHELL: Final = ("sh", "-c")
"""A run whose command line is ``sh -c SCRIPT`` runs a shell script."""

_PLACEHOLDER: Final = re.compile(r"(?<!\$)\{([a-z_]+)\}")
DEV_PLACEHOLDERS: Final = ("listener_fd", "schedule", "drivers_pool")
"""The ``{fields}`` of occ dev's command lines: the API's inherited socket, beat's schedule file
and the driver worker's pool (``threads`` on a polling broker, see ``occ.dev.children``)."""


@dataclass(frozen=True)
class Run:
    """How one layout runs a process."""

    name: str
    """The layout's name for it: Procfile entry, compose service, Kubernetes workload (a
    Deployment, or the Job of the release) or occ dev child."""
    argv: tuple[str, ...]
    """The command line; occ dev's may hold ``{placeholders}`` (``DEV_PLACEHOLDERS``)."""
    environment: tuple[tuple[str, str], ...] = ()
    """Procfile only: variables set on the command's line (the other layouts set theirs in
    their own files)."""
    replicas: int | None = None
    """Kubernetes only: the Deployment's replicas (``None`` for the release's Job)."""

    @property
    def text(self) -> str:
        """The command as shell text: the script of ``sh -c SCRIPT``, else the argv's words."""
        if self.argv[:2] == SHELL and len(self.argv) == 3:
            return self.argv[2]
        return shell.line(self.argv)

    def filled(self, values: Mapping[str, str]) -> tuple[str, ...]:
        """The command line with its ``{placeholders}`` replaced by ``values`` (a shell's
        ``${VARIABLE}`` is not one); a placeholder without a value is a ``KeyError``."""
        return tuple(_PLACEHOLDER.sub(lambda found: values[found[1]], arg) for arg in self.argv)


@dataclass(frozen=True)
class Worker:
    """What a Celery worker process consumes, on which pool, under which node name."""

    queue: str
    pool: str
    node: str
    """Node names are ``<node>@<host>`` (``celery inspect ping -d`` in health checks)."""

    def argv(self, *options: str, pool: str | None = None) -> tuple[str, ...]:
        """``celery worker`` on this queue and pool (or ``pool``) under its node name."""
        return (
            *CELERY, "worker", "-Q", self.queue, "-P", pool or self.pool, "-n", self.node_name,
            *options,
        )  # fmt: skip

    def through_occ(self, concurrency: int, *celery_args: str) -> tuple[str, ...]:
        """The same worker through ``occ worker``, which checks the settings first."""
        return (
            "occ", "worker", "--queues", self.queue, "--pool", self.pool,
            "--concurrency", str(concurrency), "--", *celery_args,
        )  # fmt: skip

    @property
    def node_name(self) -> str:
        return f"{self.node}@%h"


@dataclass(frozen=True)
class Process:
    """One kind of occ process and its runs."""

    name: str
    role: str
    command: str
    """What every layout's command line holds, as the documentation shows it."""
    runs: Mapping[Layout, Run]
    worker: Worker | None = None
    dev_in_process: bool = False
    """occ dev does this itself, in its own process, rather than as a child."""
    metrics: bool = False
    """A program whose metrics a scrape reads: its own ``PROMETHEUS_MULTIPROC_DIR``."""


CELERY_APP: Final = "occ.tasks.app"
"""What ``celery -A`` loads: the lazily built app of ``occ.tasks.app``."""
CELERY: Final = ("celery", "-A", CELERY_APP)
API_FACTORY: Final = "occ.web.app:create_app()"
GUNICORN: Final = (
    "gunicorn",
    API_FACTORY,
    "--config",
    gunicorn_hooks.CONFIG_OPTION,
    *serving.CLASSES,
)
"""How every layout starts the API: occ's app factory, server hooks, worker and logger class."""
CELERY_BEAT: Final = (*CELERY, "beat", "-S", "celery.beat:Scheduler")
"""Beat with the in-memory scheduler: the schedule is the code's (``occ.tasks.app``)."""
RELEASE_STEPS: Final = "occ db upgrade && occ bootstrap --if-missing"
PROCFILE_METRICS: Final = f"${{{metrics_directory.VARIABLE}:-/tmp/occ-metrics}}"
"""The Procfile's base of the programs' metrics directories (one directory per program below)."""
IMAGE_METRICS: Final = "/var/lib/occ/metrics"
DOCKER_SOCKET: Final = "/var/run/docker.sock"
"""The Docker Engine's socket where compose mounts it."""
"""The image's metrics directory, which compose sets too: a container runs one program."""

_IDLE_UNDER_HONCHO = 'if [ -n "$HONCHO_PROCESS_NAME" ]; then exec tail -f /dev/null; fi'
# gunicorn's worker timeout and graceful stop, within Heroku's 30 s before SIGKILL, compose's
# stop_grace_period and the pods' termination grace period
_GRACE = ("--timeout", "30", "--graceful-timeout", "20")
_IMAGE_API = ("--bind", "0.0.0.0:8000", "--workers", "2")
_DEV_API = ("--bind", "fd://{listener_fd}", "--workers", "2", "--graceful-timeout", "10")
_LOG = ("-l", "INFO")
_QUIET = ("--without-gossip", "--without-mingle")
TASK_EVENTS: Final = "-E"
"""A worker's flag to send task events: Flower shows the tasks from them."""
_PRODUCTION_WORKER = (*_LOG, "-c", "4", TASK_EVENTS, *_QUIET)
_DEV_WORKER = (*_LOG, "-c", "2", *_QUIET)
# Celery has no flag for the soft shutdown window: 20 s ends about 10 s before Heroku's SIGKILL
# and within the pods' grace period
_SOFT_SHUTDOWN = "worker_soft_shutdown_timeout=20"


def _metrics(program: str) -> tuple[tuple[str, str], ...]:
    return ((metrics_directory.VARIABLE, f"{PROCFILE_METRICS}/{program}"),)


RELEASE: Final = Process(
    name="release",
    role="migrations and the Installation, once per deploy",
    command=RELEASE_STEPS,
    runs={
        # honcho stops every process when one exits: under it, release then stays idle
        Layout.PROCFILE: Run("release", (*SHELL, f"{RELEASE_STEPS} && {_IDLE_UNDER_HONCHO}")),
        Layout.COMPOSE: Run("migrate", (*SHELL, f"{RELEASE_STEPS} --key-file /run/occ/admin.key")),
        Layout.KUBERNETES: Run("occ-migrate", (*SHELL, RELEASE_STEPS)),
    },
    dev_in_process=True,
)

API: Final = Process(
    name="API",
    role="the HTTP API; stateless",
    command=shell.line(GUNICORN[:2]),
    runs={
        Layout.PROCFILE: Run(
            "web", (*GUNICORN, "--bind", "0.0.0.0:$PORT", *_GRACE), environment=_metrics("web")
        ),
        Layout.COMPOSE: Run("api", (*GUNICORN, *_IMAGE_API, *_GRACE)),
        Layout.KUBERNETES: Run("occ-api", ("occ", "api", *_IMAGE_API, "--", *_GRACE), replicas=2),
        Layout.DEV: Run("api", (*GUNICORN, *_DEV_API)),
    },
    metrics=True,
)

CONTROL_WORKER = Worker(queue=names.CONTROL_QUEUE, pool="threads", node="control")
CONTROL: Final = Process(
    name="control worker",
    role="claim, recovery and observation; one or two",
    command=shell.line(CONTROL_WORKER.argv()[:-2]),
    runs={
        Layout.PROCFILE: Run(
            "control", CONTROL_WORKER.argv(*_PRODUCTION_WORKER), environment=_metrics("control")
        ),
        Layout.COMPOSE: Run("control", CONTROL_WORKER.argv(*_PRODUCTION_WORKER)),
        Layout.KUBERNETES: Run(
            "occ-control", CONTROL_WORKER.through_occ(4, TASK_EVENTS, *_QUIET), replicas=1
        ),
        Layout.DEV: Run("control", CONTROL_WORKER.argv(*_DEV_WORKER)),
    },
    worker=CONTROL_WORKER,
    metrics=True,
)

DRIVER_WORKER = Worker(queue=names.DRIVER_QUEUE, pool="prefork", node="drivers")
DRIVERS: Final = Process(
    name="driver worker",
    role="Compute work (`occ.run_work`); scale it with the fleet",
    command=shell.line(DRIVER_WORKER.argv()[:-2]),
    runs={
        Layout.PROCFILE: Run(
            "worker",
            DRIVER_WORKER.argv(*_PRODUCTION_WORKER, _SOFT_SHUTDOWN),
            # Heroku signals every process of the dyno: the pool processes then ignore SIGTERM
            # and the main process makes the soft shutdown
            environment=(("REMAP_SIGTERM", "SIGQUIT"), *_metrics("worker")),
        ),
        Layout.COMPOSE: Run("worker", DRIVER_WORKER.argv(*_PRODUCTION_WORKER, _SOFT_SHUTDOWN)),
        Layout.KUBERNETES: Run(
            "occ-drivers",
            DRIVER_WORKER.through_occ(4, TASK_EVENTS, *_QUIET, _SOFT_SHUTDOWN),
            replicas=2,
        ),
        Layout.DEV: Run("drivers", DRIVER_WORKER.argv(*_DEV_WORKER, pool="{drivers_pool}")),
    },
    worker=DRIVER_WORKER,
    metrics=True,
)

BEAT: Final = Process(
    name="beat",
    role="the schedule; one (a second is harmless)",
    command=shell.line(CELERY_BEAT),
    runs={
        Layout.PROCFILE: Run("beat", (*CELERY_BEAT, *_LOG), environment=_metrics("beat")),
        # remote control: compose's health check pings beat
        Layout.COMPOSE: Run("beat", (*CELERY_BEAT, "--enable-remote-control", *_LOG)),
        Layout.KUBERNETES: Run("occ-beat", ("occ", "beat"), replicas=1),
        Layout.DEV: Run("beat", (*CELERY_BEAT, "--schedule", "{schedule}", *_LOG)),
    },
    metrics=True,
)

_FLOWER = (*CELERY, "flower", "--read-only")
# Flower reads its credentials from FLOWER_BASIC_AUTH, never from its command line (which every
# user of the host can read); the shell stops before Flower starts when they are missing
_PROCFILE_FLOWER = (
    ': "${FLOWER_BASIC_AUTH:?set FLOWER_BASIC_AUTH to user:password}" && exec '
    + shell.line((*_FLOWER, "--port=$PORT"))
)
_COMPOSE_FLOWER = (
    'FLOWER_BASIC_AUTH="$(cat /run/secrets/flower_basic_auth)" && '
    ': "${FLOWER_BASIC_AUTH:?the flower_basic_auth secret is empty}" && '
    "export FLOWER_BASIC_AUTH && exec " + shell.line((*_FLOWER, "--address=0.0.0.0", "--port=5555"))
)
FLOWER: Final = Process(
    name="Flower",
    role="task visibility; keep it private",
    command=shell.line(_FLOWER),
    runs={
        Layout.PROCFILE: Run("flower", (*SHELL, _PROCFILE_FLOWER)),
        Layout.COMPOSE: Run("flower", (*SHELL, _COMPOSE_FLOWER)),
    },
)

LOG_GATE_SOCKET: Final = "/run/occ-docker/docker.sock"
"""Where compose's log gate listens, in the volume it shares with the API."""
LOG_GATE: Final = Process(
    name="docker log gate",
    role="the API's gateway log reads, in front of the Docker Engine; nothing else",
    command="occ docker log-gate",
    runs={
        # the API reads gateway logs through it instead of holding the engine's socket; the
        # other layouts' API reaches its engine (or cluster) itself
        Layout.COMPOSE: Run(
            "docker-log-gate",
            ("occ", "docker", "log-gate", "--socket", LOG_GATE_SOCKET, "--engine", DOCKER_SOCKET),
        ),
    },
)

PROCESSES: Final = (RELEASE, API, CONTROL, DRIVERS, BEAT, FLOWER, LOG_GATE)


def runs(layout: Layout) -> tuple[tuple[Process, Run], ...]:
    """The processes ``layout`` runs, with its run of each, in the table's order."""
    return tuple((process, process.runs[layout]) for process in PROCESSES if layout in process.runs)


def named(layout: Layout, name: str) -> Process:
    """The process ``layout`` calls ``name``."""
    for process, run in runs(layout):
        if run.name == name:
            return process
    raise KeyError(f"{layout} runs no process named {name}")


def worker_nodes() -> dict[str, str]:
    """The node name of each queue's worker: ``occ.control`` -> ``control``, ..."""
    return {p.worker.queue: p.worker.node for p in PROCESSES if p.worker is not None}
