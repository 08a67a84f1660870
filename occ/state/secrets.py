"""Secret rows: insert, read metadata, read the sealed value, delete, and references.

Takes the caller's session and never commits. The row holds metadata and the value sealed by
``occ.state.secret_store``; this module never sees a plaintext value. ``Secret`` (metadata) is what
reads return; only ``sealed_value`` returns the ciphertext, for the runtime that decrypts it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import models, referenced_rows, rows

_SECRETS: Final = cast(sa.Table, models.Secret.__table__)


@dataclass(frozen=True, kw_only=True)
class Secret:
    """A Secret's metadata (never its value)."""

    id: str
    namespace_id: str
    name: str
    created_at: dt.datetime
    updated_at: dt.datetime


_VALUES: Final = rows.Values(_SECRETS, Secret)
"""A Secret's metadata: every column but its value (no field names it)."""
# its writes drop the database's exception: the parameters hold the ciphertext
_ROWS: Final = referenced_rows.ReferencedRows(
    noun="Secret",
    values=_VALUES,
    name_key="secrets_namespace_id_name_key",
    name_valid="secrets_name_valid",
    agent_column="harness_auth_secret_id",
    agent_fkey="agents_harness_auth_secret_fkey",
)


def insert(
    session: orm.Session, *, secret_id: str, namespace_id: str, name: str, value_ciphertext: bytes
) -> Secret:
    """A new Secret whose value was sealed for ``secret_id`` beforehand.

    Raises:
        Conflict: the Namespace already holds a Secret with this name.
        InvalidInput: the database refused the name.
    """
    return _ROWS.insert(
        session,
        id=secret_id,
        namespace_id=namespace_id,
        name=name,
        value_ciphertext=value_ciphertext,
    )


get: Final = _VALUES.get_in
"""The Secret's metadata (``session, namespace_id, secret_id``), or ``None``; ``lock`` takes its
row lock."""

list_in: Final = _VALUES.list_in
"""The Namespace's Secrets (metadata) in creation order (``session, namespace_id``; those in
``window``)."""


def sealed_value(session: orm.Session, namespace_id: str, secret_id: str) -> bytes | None:
    """The stored ciphertext of the Secret's value (``secret_store`` opens it), or ``None``."""
    value = session.execute(
        sa.select(_SECRETS.c.value_ciphertext).where(
            _SECRETS.c.id == secret_id, _SECRETS.c.namespace_id == namespace_id
        )
    ).scalar()
    return None if value is None else bytes(value)


delete: Final = _ROWS.delete
"""Remove the Secret (``session, namespace_id, secret_id``); whether it existed.
``Conflict`` while an Agent still references it."""

referencing_agents: Final = _ROWS.referencing_agents
"""Ids of (up to ten) Agents whose harness authentication uses this Secret."""

hold_reference: Final = _ROWS.hold_reference
"""Whether the Secret is in the Namespace; holds a key-share lock until commit so that it
cannot be deleted before the Agent that references it is written."""
