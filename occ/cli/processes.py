"""The commands that run occ's processes: ``occ dev``, ``occ api``, ``occ worker``,
``occ beat`` and the stand-in ``occ gateway``; each checks the settings, then execs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

from occ import dev as dev_runner
from occ.dev import options as dev_options
from occ.drivers import gateway as gateway_server
from occ.process_table import table
from occ.settings.config import Settings
from occ.tasks.names import CONTROL_QUEUE, DRIVER_QUEUE

COMPUTE_DRIVERS = ("local", "docker", "kubernetes", "ssh")


@click.command()
@click.option(
    "--home",
    default=".occ",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="State directory: database, logs, admin key, secrets.",
)
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="API port on 127.0.0.1 (0: any free port).",
)
@click.option(
    "--compute",
    type=click.Choice(COMPUTE_DRIVERS),
    default=None,
    help="Compute Driver (default: OCC_COMPUTE_DRIVER, else local).",
)
@click.option(
    "--ready-timeout",
    default=120.0,
    show_default=True,
    type=click.FloatRange(min=1),
    help="Seconds to wait for every process.",
)
@click.option(
    "--flower",
    is_flag=True,
    help="Also run Flower on 127.0.0.1, behind a generated password (HOME/flower.auth).",
)
@click.option(
    "--flower-port",
    default=5555,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="Flower's port on 127.0.0.1 (with --flower).",
)
def dev(
    *,
    home: Path,
    port: int,
    compute: str | None,
    ready_timeout: float,
    flower: bool,
    flower_port: int,
) -> None:
    """Run the API, both workers and beat on this machine, with embedded services.

    PostgreSQL comes from pgserver unless OCC_DATABASE_URL is set, Redis is started on a free
    port unless OCC_BROKER_URL is set. Prints one JSON line (event dev.ready, apiUrl,
    adminKeyFile) when everything is ready; logs go to HOME/logs (appended, rotated). A child
    that exits is restarted with backoff; Ctrl-C or SIGTERM stops it all. With --flower the
    line names Flower's URL (flowerUrl) and its credential's file (flowerAuthFile).
    """
    code = dev_runner.run(
        dev_options.DevOptions(
            home=home,
            port=port,
            compute=compute,
            ready_timeout=ready_timeout,
            flower_port=flower_port if flower else None,
        )
    )
    if code:
        raise click.exceptions.Exit(code)


_PASS_THROUGH = {"ignore_unknown_options": True, "allow_extra_args": True}
_LOGLEVEL_HELP = "Celery's -l; occ's logging replaces Celery's: OCC_LOG_LEVEL sets the level."


@click.command(context_settings=_PASS_THROUGH)
@click.option(
    "--bind",
    default="127.0.0.1:8000",
    show_default=True,
    help="Address to listen on (HOST:PORT, unix:PATH or fd://FD).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: gunicorn's, which reads WEB_CONCURRENCY).",
)
@click.argument("gunicorn_args", nargs=-1, type=click.UNPROCESSED)
def api(bind: str, workers: int | None, gunicorn_args: tuple[str, ...]) -> None:
    """Run the HTTP API under gunicorn (further arguments go to gunicorn)."""
    Settings.from_env()  # fail here, in one line, rather than in every gunicorn worker
    argv = [*table.GUNICORN, "--bind", bind]
    if workers is not None:
        argv += ["--workers", str(workers)]
    _exec_python_module([*argv, *gunicorn_args])


@click.command(context_settings=_PASS_THROUGH)
@click.option(
    "--queues",
    "-Q",
    default=f"{CONTROL_QUEUE},{DRIVER_QUEUE}",
    show_default=True,
    help="Comma-separated queues to consume.",
)
@click.option(
    "--pool",
    "-P",
    type=click.Choice(["prefork", "threads"]),
    default="prefork",
    show_default=True,
    help="Execution pool (prefork or threads; the solo pool is not supported).",
)
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(min=1),
    default=None,
    help="Pool size (default: Celery's, the number of CPUs).",
)
@click.option(
    "--name",
    "-n",
    default=None,
    help="Node name (default: control@%h, drivers@%h or worker@%h by queues).",
)
@click.option("--loglevel", "-l", default="INFO", show_default=True, help=_LOGLEVEL_HELP)
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def worker(
    *,
    queues: str,
    pool: str,
    concurrency: int | None,
    name: str | None,
    loglevel: str,
    celery_args: tuple[str, ...],
) -> None:
    """Run a Celery worker (further arguments, such as -E or setting=value, go to Celery)."""
    Settings.from_env()
    names = [queue.strip() for queue in queues.split(",") if queue.strip()]
    if not names:
        raise click.BadParameter("name at least one queue", param_hint="--queues")
    if name is None:
        # a worker of one queue is named as in the process table; any other mix is "worker"
        node = table.worker_nodes().get(names[0], "worker") if len(names) == 1 else "worker"
        name = f"{node}@%h"
    argv = [*table.CELERY, "worker", "-Q", ",".join(names), "-P", pool, "-n", name, "-l", loglevel]
    if concurrency is not None:
        argv += ["-c", str(concurrency)]
    _exec_python_module([*argv, *celery_args])


@click.command(context_settings=_PASS_THROUGH)
@click.option("--loglevel", "-l", default="INFO", show_default=True, help=_LOGLEVEL_HELP)
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def beat(loglevel: str, celery_args: tuple[str, ...]) -> None:
    """Run Celery beat with the in-memory scheduler (one is enough; two are harmless)."""
    Settings.from_env()
    _exec_python_module([*table.CELERY_BEAT, "-l", loglevel, *celery_args])


def _exec_python_module(argv: list[str]) -> NoReturn:
    """Replace this process with ``python -m <argv[0]> <argv[1:]>`` (same interpreter)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", *argv])  # noqa: S606 - our own argv


@click.command()
@click.option("--port", required=True, type=click.IntRange(1, 65535), help="Port to listen on.")
@click.option("--revision-id", required=True, help="AgentRevision this gateway serves.")
@click.option("--agent-id", required=True, help="Agent the revision belongs to.")
@click.option(
    "--generation",
    required=True,
    type=click.IntRange(min=0),
    help="Configuration generation of the revision's snapshot.",
)
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The revision's JSON configuration snapshot.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--unhealthy",
    is_flag=True,
    help="Answer /healthz with 503 forever (a runtime that never becomes ready).",
)
@click.option(
    "--credential-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="File holding the harness credential (only its fingerprint is ever shown).",
)
def gateway(
    *,
    port: int,
    revision_id: str,
    agent_id: str,
    generation: int,
    config_path: Path,
    host: str,
    unhealthy: bool,
    credential_file: Path | None,
) -> None:
    """Run the stand-in gateway of one revision (what the local Compute Driver starts).

    Serves GET /healthz (status, revisionId, agentId, configurationGeneration and the
    credential's fingerprint) and GET /config (to its own credential only)
    (the snapshot) until SIGTERM. Needs no settings and writes nothing secret.
    """
    code = gateway_server.serve(
        port=port,
        revision_id=revision_id,
        agent_id=agent_id,
        generation=generation,
        config=config_path,
        host=host,
        unhealthy=unhealthy,
        credential_file=credential_file,
    )
    if code:
        raise click.exceptions.Exit(code)
