"""Account rows: the managed accounts an account Backend issued to a Namespace.

Takes the caller's session and never commits. A row holds the account's name and the Backend
binding verified when it was issued (Backend id, driver, workspace); never a token value nor
a token reference, which the Backend keeps and answers (``occ.drivers.account``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import exc, orm

from occ.foundation import errors
from occ.state import models, rows

_ACCOUNTS: Final = cast(sa.Table, models.Account.__table__)


@dataclass(frozen=True, kw_only=True)
class Account:
    """An issued account and the Backend binding it was issued under."""

    id: str
    namespace_id: str
    name: str
    backend_id: str
    driver: str
    workspace: str
    created_by: str
    created_at: dt.datetime
    updated_at: dt.datetime
    withdrawn_at: dt.datetime | None

    @property
    def withdrawn(self) -> bool:
        """The Backend withdrew the account (occ recorded it)."""
        return self.withdrawn_at is not None


_VALUES: Final = rows.Values(_ACCOUNTS, Account)


def insert(
    session: orm.Session,
    *,
    account_id: str,
    namespace_id: str,
    name: str,
    backend_id: str,
    driver: str,
    workspace: str,
    created_by: str,
) -> Account:
    """A new account row.

    Raises:
        Conflict: the Namespace already holds an account with this name.
    """
    try:
        with session.begin_nested():
            return _VALUES.inserted(
                session,
                id=account_id,
                namespace_id=namespace_id,
                name=name,
                backend_id=backend_id,
                driver=driver,
                workspace=workspace,
                created_by=created_by,
            )
    except exc.IntegrityError as error:
        if "accounts_namespace_id_name_key" in str(error.orig):
            raise errors.Conflict("an account with this name exists in the Namespace") from None
        raise


def find_named(session: orm.Session, namespace_id: str, name: str) -> Account | None:
    """The Namespace's account of this name, or ``None``."""
    return _VALUES.find(session, _ACCOUNTS.c.namespace_id == namespace_id, _ACCOUNTS.c.name == name)


get: Final = _VALUES.get_in
"""The account (``session, namespace_id, account_id``), or ``None``; ``lock`` takes its row
lock."""

list_in: Final = _VALUES.list_in
"""The Namespace's accounts in creation order (``session, namespace_id``; those in
``window``)."""


def get_shared(session: orm.Session, namespace_id: str, account_id: str) -> Account | None:
    """The account under a shared row lock (``FOR SHARE``), or ``None``: a withdrawal being
    recorded (``get`` with ``lock``, ``FOR UPDATE``) commits before this read, or waits for the
    caller's transaction to end."""
    query = _VALUES.select(_ACCOUNTS.c.id == account_id, _ACCOUNTS.c.namespace_id == namespace_id)
    return rows.first(session, query.with_for_update(read=True), _VALUES.make)


def mark_withdrawn(session: orm.Session, namespace_id: str, account_id: str) -> Account | None:
    """Record that the Backend withdrew the account (the first moment is kept): the row then,
    or ``None`` if it is missing."""
    session.execute(
        rows.stamped(
            _ACCOUNTS,
            "withdrawn_at",
            _ACCOUNTS.c.id == account_id,
            _ACCOUNTS.c.namespace_id == namespace_id,
        ).values(updated_at=sa.func.clock_timestamp())
    )
    return get(session, namespace_id, account_id)


def agents_running_on(session: orm.Session, namespace_id: str, account_id: str) -> list[str]:
    """Ids of the Namespace's live Agents whose active revision pins the account, locked
    (``FOR UPDATE``) in id order."""
    agents = cast(sa.Table, models.Agent.__table__)
    revisions = cast(sa.Table, models.AgentRevision.__table__)
    query = (
        sa.select(agents.c.id)
        .join(revisions, revisions.c.id == agents.c.active_revision_id)
        .where(
            agents.c.namespace_id == namespace_id,
            agents.c.status == "active",
            revisions.c.harness_auth["kind"].astext == "managedAccount",
            revisions.c.harness_auth["accountId"].astext == account_id,
        )
        .order_by(agents.c.id)
        .with_for_update(of=agents)
    )
    return [str(agent_id) for agent_id in session.execute(query).scalars()]
