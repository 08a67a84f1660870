"""``occ docker``: the docker Compute Driver's helpers; ``log-gate`` lets the API read gateway
logs without holding the Docker Engine's socket."""

from __future__ import annotations

from pathlib import Path

import click

from occ.drivers.compute.docker import log_gate
from occ.telemetry import observability

IDLE_S = 330.0
"""How long a relayed stream may stay quiet: past the longest follow the API serves."""


@click.group()
def docker() -> None:
    """Helpers of the docker Compute Driver."""


@docker.command("log-gate")
@click.option(
    "--socket",
    "socket_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where to listen (a unix socket, created 0660); the API's OCC_DOCKER_HOST names it.",
)
@click.option(
    "--engine",
    "engine_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("/var/run/docker.sock"),
    show_default=True,
    help="The Docker Engine's unix socket.",
)
def log_gate_command(socket_path: Path, engine_path: Path) -> None:
    """Serve gateway log reads from the engine, and refuse everything else, until SIGTERM.

    Lets through GET of the engine's version, of an occ gateway container's logs and of its
    inspection (cut to Config.Tty); anything else answers 403. Needs no settings.
    """
    observability.configure("occ-docker-log-gate")
    gate = log_gate.LogGate(str(socket_path), str(engine_path), idle_s=IDLE_S)
    observability.log("docker.log-gate-serving", socket=str(socket_path), engine=str(engine_path))
    try:
        gate.serve_forever()
    finally:
        gate.server_close()
