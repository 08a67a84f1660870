"""``occ db`` (migrations) and ``occ bootstrap``: the database's schema and its first
administrator, both as the owner or the application connection the settings name."""

from __future__ import annotations

import json
import os
from typing import Any

import click
from alembic.util import CommandError

from occ.cli import base
from occ.controller import installation, principals, recovery
from occ.foundation import errors
from occ.runtime import composition
from occ.settings.config import Settings
from occ.state import schema
from occ.state.db import Database


@click.group()
def db() -> None:
    """Migrate or check the database schema.

    Connects as the owner: OCC_MIGRATION_DATABASE_URL, else OCC_DATABASE_URL.
    """


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Alembic revision to reach.")
def db_upgrade(revision: str) -> None:
    """Apply the Alembic migrations."""
    url = base.owner_url()
    try:
        schema.upgrade(url, revision)
    except CommandError as exc:
        base.fail(f"migration failed: {exc}", base.EXIT_OCC_ERROR)
    click.echo(f"occ db upgrade: database at revision {revision}")


@db.command("check")
def db_check() -> None:
    """Fail (exit 1) if the migrated database and the models disagree."""
    url = base.owner_url()
    try:
        schema.check(url)
    except CommandError as exc:
        base.fail(f"schema check failed: {exc}", base.EXIT_CHECK_FAILED)
    click.echo("occ db check: the database matches the models")


@click.command()
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
    built = composition.build(Settings.from_env(), pool_size=1, application_name="occ-bootstrap")
    try:
        _bootstrap(
            built, if_missing=if_missing, key_file=key_file, name=name, admin_name=admin_name
        )
    finally:
        built.database.dispose()


def _bootstrap(
    built: composition.Runtime,
    *,
    if_missing: bool,
    key_file: str | None,
    name: str,
    admin_name: str,
) -> None:
    if key_file is not None and os.path.lexists(key_file):
        existing = _existing_installation(built)
        if existing is not None and if_missing:
            _print_line({"installationId": existing, "created": False})
            return
        base.fail(
            f"the key file {key_file} already exists; refusing to overwrite it", base.EXIT_OCC_ERROR
        )
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
        base.fail(
            f"the key file {key_file} already exists; refusing to overwrite it", base.EXIT_OCC_ERROR
        )
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
            base.fail(
                f"cannot write the key file {self.key_file}: {exc.strerror}; key {key_id} "
                "was minted but not delivered: revoke it",
                base.EXIT_OCC_ERROR,
            )
        self.written = True
        assert self.key_file is not None  # a descriptor is only opened for a file
        return {"keyFile": self.key_file}

    def __exit__(self, *exc_info: object) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            if not self.written and self.key_file is not None:
                os.unlink(self.key_file)


def _existing_installation(built: composition.Runtime) -> str | None:
    with built.database.snapshot() as session:
        try:
            return installation.current(session).id
        except errors.NotFound:
            return None


def _create_key_file(path: str) -> int:
    try:
        return os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        base.fail(
            f"the key file {path} already exists; refusing to overwrite it", base.EXIT_OCC_ERROR
        )
    except OSError as exc:
        base.fail(f"cannot create the key file {path}: {exc.strerror}", base.EXIT_OCC_ERROR)


def _print_line(document: dict[str, Any]) -> None:
    click.echo(json.dumps(document, separators=(",", ":")))
