"""The ``occ`` command: database migrations, the development runner and the version.

An entry point like ``web`` and ``tasks``: it reads settings once through
``Settings.from_env()`` and calls the core. Errors of occ (``OccError``) end the command with
one line on stderr and exit code 2; nothing prints a traceback or a connection URL.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import click
from alembic.util import CommandError

import occ
from occ import dev as dev_runner
from occ import errors, runtime, schema
from occ import gateway as gateway_server
from occ.client import commands as client_commands
from occ.config import Settings
from occ.controller import installation, principals, recovery
from occ.db import Database
from occ.dev import options as dev_options
from occ.tasks.app import CONTROL_QUEUE, DRIVER_QUEUE
from occ.web import serving

EXIT_OCC_ERROR = 2
"""Exit code of a command that failed with an ``OccError``."""

EXIT_CHECK_FAILED = 1
"""Exit code of ``occ db check`` when the models and the database disagree."""

CELERY_APP = "occ.tasks.app"
"""What ``celery -A`` loads: the lazily built app of ``occ.tasks.app``."""

COMPUTE_DRIVERS = ("local", "docker", "kubernetes")


class OccCommandError(click.ClickException):
    """An ``OccError`` shown as one line: ``occ: error: CODE: detail``."""

    exit_code = EXIT_OCC_ERROR

    def __init__(self, error: errors.OccError) -> None:
        detail = _one_line(error.detail)
        if isinstance(error, errors.InvalidInput) and error.errors:
            detail = "; ".join(
                f"{field.pointer}: {_one_line(field.message)}" for field in error.errors
            )
        super().__init__(f"{error.code}: {detail}")

    def show(self, file: Any = None) -> None:
        click.echo(f"occ: error: {self.format_message()}", err=True)


class _OccGroup(click.Group):
    """A group that turns ``OccError`` from any subcommand into ``OccCommandError``."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except errors.OccError as error:
            raise OccCommandError(error) from error


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _owner_url() -> str:
    return Settings.from_env().owner_database_url


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"occ: error: {_one_line(message)}", err=True)
    raise click.exceptions.Exit(code)


@click.group(name="occ", cls=_OccGroup)
@click.version_option(occ.__version__, "--version", prog_name="occ", message="%(prog)s %(version)s")
def cli() -> None:
    """OpenClaw Control Plane."""


@cli.group()
def db() -> None:
    """Migrate or check the database schema.

    Connects as the owner: OCC_MIGRATION_DATABASE_URL, else OCC_DATABASE_URL.
    """


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Alembic revision to reach.")
def db_upgrade(revision: str) -> None:
    """Apply the Alembic migrations."""
    url = _owner_url()
    try:
        schema.upgrade(url, revision)
    except CommandError as exc:
        _fail(f"migration failed: {exc}", EXIT_OCC_ERROR)
    click.echo(f"occ db upgrade: database at revision {revision}")


@db.command("check")
def db_check() -> None:
    """Fail (exit 1) if the migrated database and the models disagree."""
    url = _owner_url()
    try:
        schema.check(url)
    except CommandError as exc:
        _fail(f"schema check failed: {exc}", EXIT_CHECK_FAILED)
    click.echo("occ db check: the database matches the models")


@cli.command()
@click.option(
    "--if-missing",
    is_flag=True,
    help="Succeed without changes when the Installation already exists.",
)
@click.option(
    "--recover-admin",
    is_flag=True,
    help="Break-glass: give the bootstrap administrator a new key and its access back "
    "(connects as the database owner).",
)
@click.option(
    "--key-file",
    type=click.Path(),
    help="Write the administrator's key to this new file (mode 0600) instead of printing it.",
)
@click.option("--name", default="occ", show_default=True, help="Name of the Installation.")
@click.option(
    "--admin-name",
    default="administrator",
    show_default=True,
    help="Name of the first administrator principal.",
)
def bootstrap(
    if_missing: bool, recover_admin: bool, key_file: str | None, name: str, admin_name: str
) -> None:
    """Create the Installation, its administrator Role and principal, and a first API key.

    Prints one JSON line with the key, shown this once (or, with --key-file, the file it was
    written to). A bootstrap interrupted before its key was minted gets the key on the next
    run; otherwise --if-missing prints only the Installation's id and "created": false. It
    never mints a key for any principal but the one the first bootstrap made administrator.
    Connects with OCC_DATABASE_URL and keys the hash with OCC_API_KEY_PEPPER.

    --recover-admin connects as the owner (OCC_MIGRATION_DATABASE_URL, else
    OCC_DATABASE_URL), re-enables the bootstrap administrator, binds it to the administrator
    Role on the Installation again if needed, mints it a new key (written like the first one)
    and audits installation.recover_admin.
    """
    if recover_admin:
        if if_missing:
            raise click.UsageError("--recover-admin and --if-missing exclude each other")
        settings = Settings.from_env()
        owner = Database(
            settings.owner_database_url, pool_size=1, application_name="occ-recover-admin"
        )
        try:
            _recover_admin(owner, pepper=settings.api_key_pepper, key_file=key_file)
        finally:
            owner.dispose()
        return
    built = runtime.build(Settings.from_env(), pool_size=1, application_name="occ-bootstrap")
    try:
        _bootstrap(
            built, if_missing=if_missing, key_file=key_file, name=name, admin_name=admin_name
        )
    finally:
        built.database.dispose()


def _bootstrap(
    built: runtime.Runtime, *, if_missing: bool, key_file: str | None, name: str, admin_name: str
) -> None:
    if key_file is not None and os.path.lexists(key_file):
        existing = _existing_installation(built)
        if existing is not None and if_missing:
            _print_line({"installationId": existing, "created": False})
            return
        _fail(f"the key file {key_file} already exists; refusing to overwrite it", EXIT_OCC_ERROR)
    with _KeyDelivery(key_file) as delivery:
        result = installation.bootstrap_installation(
            built.database, name=name, admin_name=admin_name
        )
        minted = (
            None
            if result.admin_principal_id is None
            else principals.issue_first_key(
                built.database,
                principal_id=result.admin_principal_id,
                pepper=built.settings.api_key_pepper,
            )
        )
        if minted is None:
            if not if_missing:
                raise errors.Conflict(
                    "the installation already exists (use --if-missing to accept that)"
                )
            _print_line({"installationId": result.installation_id, "created": False})
            return
        line: dict[str, Any] = {
            "installationId": result.installation_id,
            "principalId": minted.principal_id,
            "keyId": minted.id,
            **delivery.deliver(minted.id, minted.key),
            "created": result.created,
        }
        _print_line(line)


def _recover_admin(owner: Database, *, pepper: str, key_file: str | None) -> None:
    if key_file is not None and os.path.lexists(key_file):
        _fail(f"the key file {key_file} already exists; refusing to overwrite it", EXIT_OCC_ERROR)
    with _KeyDelivery(key_file) as delivery:
        recovered = recovery.recover_admin(owner, pepper=pepper)
        _print_line(
            {
                "installationId": recovered.installation_id,
                "principalId": recovered.principal_id,
                "keyId": recovered.key_id,
                **delivery.deliver(recovered.key_id, recovered.key),
                "recovered": True,
                "reenabled": recovered.reenabled,
                "rebound": recovered.rebound,
            }
        )


class _KeyDelivery:
    """Where a minted key goes: a new file (created before the key is minted, mode 0600, and
    removed again when nothing was written to it), else the printed line."""

    def __init__(self, key_file: str | None) -> None:
        self.key_file = key_file
        self.descriptor: int | None = None
        self.written = False

    def __enter__(self) -> _KeyDelivery:
        if self.key_file is not None:
            self.descriptor = _create_key_file(self.key_file)
        return self

    def deliver(self, key_id: str, key: str) -> dict[str, str]:
        """Write the key; the fields of the JSON line that say where it went."""
        if self.descriptor is None:
            return {"key": key}
        try:
            os.write(self.descriptor, (key + "\n").encode())
            os.fsync(self.descriptor)
        except OSError as exc:
            _fail(
                f"cannot write the key file {self.key_file}: {exc.strerror}; key {key_id} "
                "was minted but not delivered: revoke it",
                EXIT_OCC_ERROR,
            )
        self.written = True
        assert self.key_file is not None  # a descriptor is only opened for a file
        return {"keyFile": self.key_file}

    def __exit__(self, *exc_info: object) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            if not self.written and self.key_file is not None:
                os.unlink(self.key_file)


def _existing_installation(built: runtime.Runtime) -> str | None:
    with built.database.snapshot() as session:
        try:
            return installation.current(session).id
        except errors.NotFound:
            return None


def _create_key_file(path: str) -> int:
    try:
        return os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        _fail(f"the key file {path} already exists; refusing to overwrite it", EXIT_OCC_ERROR)
    except OSError as exc:
        _fail(f"cannot create the key file {path}: {exc.strerror}", EXIT_OCC_ERROR)


def _print_line(document: dict[str, Any]) -> None:
    click.echo(json.dumps(document, separators=(",", ":")))


@cli.command()
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
def dev(home: Path, port: int, compute: str | None, ready_timeout: float) -> None:
    """Run the API, both workers and beat on this machine, with embedded services.

    PostgreSQL comes from pgserver unless OCC_DATABASE_URL is set, Redis is started on a free
    port unless OCC_BROKER_URL is set. Prints one JSON line (event dev.ready, apiUrl,
    adminKeyFile) when everything is ready; logs go to HOME/logs (appended, rotated). A child
    that exits is restarted with backoff; Ctrl-C or SIGTERM stops it all.
    """
    code = dev_runner.run(
        dev_options.DevOptions(home=home, port=port, compute=compute, ready_timeout=ready_timeout)
    )
    if code:
        raise click.exceptions.Exit(code)


_PASS_THROUGH = {"ignore_unknown_options": True, "allow_extra_args": True}


@cli.command(context_settings=_PASS_THROUGH)
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
    argv = ["gunicorn", "occ.web.app:create_app()", "--worker-class", serving.WORKER_CLASS]
    argv += ["--bind", bind]
    if workers is not None:
        argv += ["--workers", str(workers)]
    _exec_python_module([*argv, *gunicorn_args])


@cli.command(context_settings=_PASS_THROUGH)
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
    help="Execution pool (never solo: see DESIGN §6).",
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
@click.option("--loglevel", "-l", default="INFO", show_default=True)
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
        prefixes: dict[tuple[str, ...], str] = {
            (CONTROL_QUEUE,): "control",
            (DRIVER_QUEUE,): "drivers",
        }
        prefix = prefixes.get(tuple(names), "worker")
        name = f"{prefix}@%h"
    argv = [
        "celery",
        "-A",
        CELERY_APP,
        "worker",
        "-Q",
        ",".join(names),
        "-P",
        pool,
        "-n",
        name,
        "-l",
        loglevel,
    ]
    if concurrency is not None:
        argv += ["-c", str(concurrency)]
    _exec_python_module([*argv, *celery_args])


@cli.command(context_settings=_PASS_THROUGH)
@click.option("--loglevel", "-l", default="INFO", show_default=True)
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def beat(loglevel: str, celery_args: tuple[str, ...]) -> None:
    """Run Celery beat with the in-memory scheduler (one is enough; two are harmless)."""
    Settings.from_env()
    _exec_python_module(
        [
            "celery",
            "-A",
            CELERY_APP,
            "beat",
            "-S",
            "celery.beat:Scheduler",
            "-l",
            loglevel,
            *celery_args,
        ]
    )


def _exec_python_module(argv: list[str]) -> NoReturn:
    """Replace this process with ``python -m <argv[0]> <argv[1:]>`` (same interpreter)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", *argv])  # noqa: S606 - our own argv


@cli.command()
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


@cli.command()
def version() -> None:
    """Print the occ version."""
    click.echo(f"occ {occ.__version__}")


client_commands.register(cli)  # login, namespaces, agents, ...: the REST API's client


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``occ = occ.cli:main``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="occ")
