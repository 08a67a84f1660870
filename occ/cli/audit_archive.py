"""``occ audit export`` and ``occ audit drop-partition``: the audit log's months, exported as
JSON Lines and then dropped, as the database owner (OCC_MIGRATION_DATABASE_URL, else
OCC_DATABASE_URL)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click

from occ.controller import audit_archive
from occ.settings.config import Settings
from occ.state import audit
from occ.state.db import Database

_BEFORE = click.option(
    "--before",
    required=True,
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="A date (UTC): the months that end by it.",
)


@contextlib.contextmanager
def _owner(name: str) -> Iterator[Database]:
    database = Database(Settings.from_env().owner_database_url, pool_size=1, application_name=name)
    try:
        yield database
    finally:
        database.dispose()


def _utc(date: dt.datetime) -> dt.datetime:
    return date.replace(tzinfo=dt.UTC)


def line(event: audit.AuditEvent) -> str:
    """One event as a JSON Lines record, with the API's field names."""
    record: dict[str, Any] = {
        "id": event.id,
        "sequence": event.sequence,
        "occurredAt": event.occurred_at.isoformat(),
        "kind": str(event.kind),
        "action": event.action,
        "actorId": event.actor_id,
        "namespaceId": event.namespace_id,
        "resourceKind": event.resource_kind,
        "resourceId": event.resource_id,
        "workId": event.work_id,
        "outcome": str(event.outcome),
        "details": dict(event.details),
    }
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"


def last_sequence(path: Path) -> int | None:
    """The sequence number of the last complete record of an export file (``None``: none).

    A last line cut short (an export killed mid-write) is removed, so the export resumes with
    that event. Reads the file from its end, a block at a time."""
    if not path.exists():
        return None
    with path.open("rb+") as stream:
        position = stream.seek(0, os.SEEK_END)
        data = b""
        while True:
            step = min(65536, position)
            position -= step
            stream.seek(position)
            data = stream.read(step) + data
            end = data.rfind(b"\n")  # the end of the last complete line
            start = data.rfind(b"\n", 0, end) if end > 0 else -1
            if end >= 0 and (start >= 0 or position == 0):
                stream.truncate(position + end + 1)
                return int(json.loads(data[start + 1 : end + 1])["sequence"])
            if position == 0:  # no complete line at all
                stream.truncate(0)
                return None


@click.command("export")
@_BEFORE
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The JSON Lines file; an existing one is resumed after its last event "
    "(default: standard output).",
)
def export(before: dt.datetime, output: Path | None) -> None:
    """Export the audit events before a date as JSON Lines, in sequence order.

    Streams the events; with --output, an interrupted export run again continues after the
    last event the file holds. Each month that ends by the date is then recorded as
    exported, which occ audit drop-partition requires.
    """
    after = None if output is None else last_sequence(output)
    stream: IO[str]
    with contextlib.ExitStack() as stack:
        if output is None:
            stream = sys.stdout
        else:
            stream = stack.enter_context(output.open("a", encoding="utf-8"))

        def write(event: audit.AuditEvent) -> None:
            stream.write(line(event))

        with _owner("occ-audit-export") as database:
            done = audit_archive.export(
                database, before=_utc(before), after_sequence=after, write=write
            )
        stream.flush()
        if output is not None:
            os.fsync(stream.fileno())
    summary = {"events": done.events, "lastSequence": done.last_sequence, "months": done.months}
    click.echo(json.dumps(summary), err=output is None)


@click.command("drop-partition")
@_BEFORE
@click.option("--force", is_flag=True, help="Drop months that were not exported too.")
def drop_partition(before: dt.datetime, force: bool) -> None:
    """Drop the audit log's months that end by a date, once exported.

    Refuses a month that was never exported (or gained events since) unless --force; never
    drops the current month. Each drop is itself audited (audit.partition.drop).
    """
    with _owner("occ-audit-drop") as database:
        dropped = audit_archive.drop_partitions(database, before=_utc(before), force=force)
    click.echo(json.dumps({"months": dropped.months, "events": dropped.events}))
