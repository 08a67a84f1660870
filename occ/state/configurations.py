"""Configuration rows: insert, read, lock, compare-and-set update, delete, and references.

Takes the caller's session and never commits. A Configuration is a named native JSON document
in one Namespace; ``generation`` starts at 1 and moves by one on every update.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import ids
from occ.state import models, referenced_rows, rows

_CONFIGURATIONS: Final = cast(sa.Table, models.Configuration.__table__)


@dataclass(frozen=True, kw_only=True)
class Configuration:
    """A Configuration row."""

    id: str
    namespace_id: str
    name: str
    document: dict[str, Any]
    generation: int
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True, kw_only=True)
class PinnedConfiguration:
    """A Configuration as a deploy pins it: one consistent read of generation and document."""

    id: str
    generation: int
    document: Mapping[str, Any]


_VALUES: Final = rows.Values(_CONFIGURATIONS, Configuration, convert={"document": dict})
_ROWS: Final = referenced_rows.ReferencedRows(
    noun="Configuration",
    values=_VALUES,
    name_key="configurations_namespace_id_name_key",
    name_valid="configurations_name_valid",
    agent_column="configuration_id",
    agent_fkey="agents_configuration_fkey",
)


def insert(
    session: orm.Session,
    *,
    namespace_id: str,
    name: str,
    document: dict[str, Any],
    configuration_id: str | None = None,
) -> Configuration:
    """A new Configuration at generation 1 (with ``configuration_id`` when the caller chose it).

    Raises:
        Conflict: the Namespace already holds a Configuration with this name.
        InvalidInput: the database refused the name.
    """
    return _ROWS.insert(
        session,
        id=configuration_id or ids.new("configuration"),
        namespace_id=namespace_id,
        name=name,
        document=document,
        generation=1,
    )


get: Final = _VALUES.get_in
"""The Configuration of this Namespace (``session, namespace_id, configuration_id``), or
``None``; ``lock`` takes its row lock."""

list_in: Final = _VALUES.list_in
"""The Namespace's Configurations in creation order (``session, namespace_id``; those in
``window``)."""


def update(
    session: orm.Session,
    *,
    namespace_id: str,
    configuration_id: str,
    expected_generation: int,
    name: str | None = None,
    document: dict[str, Any] | None = None,
) -> Configuration | None:
    """Compare-and-set: change the given fields and bump ``generation`` by one.

    ``None`` when the row is gone or no longer at ``expected_generation``.

    Raises:
        Conflict: another Configuration of the Namespace has the new name.
        InvalidInput: the database refused the name.
    """
    changes: dict[str, Any] = {"generation": _CONFIGURATIONS.c.generation + 1}
    if name is not None:
        changes["name"] = name
    if document is not None:
        changes["document"] = document
    statement = rows.touched(
        _CONFIGURATIONS,
        _CONFIGURATIONS.c.id == configuration_id,
        _CONFIGURATIONS.c.namespace_id == namespace_id,
        _CONFIGURATIONS.c.generation == expected_generation,
        **changes,
    )
    return _ROWS.written(session, statement)


delete: Final = _ROWS.delete
"""Remove the Configuration (``session, namespace_id, configuration_id``); whether it existed.
``Conflict`` while an Agent still references it."""

referencing_agents: Final = _ROWS.referencing_agents
"""Ids of (up to ten) Agents whose ``configuration_id`` is this Configuration."""

hold_reference: Final = _ROWS.hold_reference
"""Whether the Configuration is in the Namespace; holds a key-share lock until commit so that it
cannot be deleted before the Agent that references it is written."""


def pinned(
    session: orm.Session, namespace_id: str, configuration_id: str
) -> PinnedConfiguration | None:
    """The Configuration's generation and native document, read together, or ``None``."""
    table = _CONFIGURATIONS
    query = (
        sa.select(table.c.id, table.c.generation, table.c.document)
        .where(table.c.namespace_id == namespace_id, table.c.id == configuration_id)
        .with_for_update(key_share=True, read=True)
    )
    return rows.first(session, query, lambda row: rows.record(PinnedConfiguration, row))
