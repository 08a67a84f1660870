"""Agent rows: insert, read, lock, draft edits, lifecycle moves, the revision counter and the
active pointer (the revisions themselves are ``revisions``).

Takes the caller's session and never commits. Lock order is the Namespace row (shared, see
``lock_namespace``), then the Agent row (``get(..., lock=True)``, or a deploy's write in
``deploys``); revision numbers come from the Agent's ``revision_counter``, taken under its row
lock.
Revisions are immutable: a trigger rejects UPDATE and the application role may not DELETE them.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from occ.foundation import errors
from occ.state import db, finalizers, models, namespaces, rows

_AGENTS: Final = cast(sa.Table, models.Agent.__table__)
_NAME_KEY: Final = "agents_namespace_id_name_key"

DRAFT_FIELDS: Final = frozenset(
    {
        "name",
        "configuration_id",
        "harness_id",
        "harness_version",
        "execution_mode",
        "harness_auth_secret_id",
        "harness_auth_account_id",
    }
)
"""The columns a draft edit may change."""


class AgentStatus(enum.StrEnum):
    """An Agent's lifecycle: in use, or being deleted."""

    ACTIVE = "active"
    DELETING = "deleting"


class DesiredRuntimeState(enum.StrEnum):
    """Whether the Agent's owner wants its runtime running."""

    RUNNING = "running"
    STOPPED = "stopped"


@dataclass(frozen=True)
class Harness:
    """An Agent's harness and its version."""

    id: str
    version: str


SECRET_SOURCE: Final = "secret"  # noqa: S105 (a source kind)
ACCOUNT_SOURCE: Final = "managedAccount"


@dataclass(frozen=True)
class HarnessAuth:
    """How the harness authenticates: a Secret (``secret``) or a managed account
    (``managedAccount``) of the Namespace, referenced by id."""

    kind: str
    secret_id: str | None = None
    account_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Agent:
    """An Agent row: its draft, lifecycle status, desired runtime state and active revision."""

    id: str
    namespace_id: str
    name: str
    configuration_id: str
    harness_id: str
    harness_version: str
    execution_mode: str
    harness_auth_secret_id: str | None
    compute_driver: str
    service_principal_id: str
    status: AgentStatus
    desired_runtime_state: DesiredRuntimeState
    active_revision_id: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    endpoint: str | None = None
    harness_auth_account_id: str | None = None

    @property
    def deleting(self) -> bool:
        return self.status == AgentStatus.DELETING

    @property
    def harness(self) -> Harness:
        return Harness(self.harness_id, self.harness_version)

    @property
    def harness_auth(self) -> HarnessAuth | None:
        """The draft's harness authentication (``None`` until one is set)."""
        if self.harness_auth_account_id is not None:
            return HarnessAuth(ACCOUNT_SOURCE, account_id=self.harness_auth_account_id)
        if self.harness_auth_secret_id is None:
            return None
        return HarnessAuth(SECRET_SOURCE, secret_id=self.harness_auth_secret_id)


_VALUES: Final = rows.Values(
    _AGENTS,
    Agent,
    convert={"status": AgentStatus, "desired_runtime_state": DesiredRuntimeState},
)

_NAMESPACES: Final = cast(sa.Table, models.Namespace.__table__)
_NAMESPACE_PREFIX: Final = "namespace__"
_AGENT_PREFIX: Final = "agent__"
_NAMESPACE_AND_AGENT: Final = (
    sa.select(
        *(column.label(_NAMESPACE_PREFIX + column.name) for column in _NAMESPACES.c),
        *(column.label(_AGENT_PREFIX + column.name) for column in _VALUES.columns),
    )
    .select_from(
        _NAMESPACES.outerjoin(
            _AGENTS,
            sa.and_(
                _AGENTS.c.namespace_id == _NAMESPACES.c.id,
                _AGENTS.c.id == sa.bindparam("agent_id"),
            ),
        )
    )
    .where(_NAMESPACES.c.id == sa.bindparam("namespace_id"))
    .with_for_update(read=True, of=_NAMESPACES)
)
"""A Namespace under its shared lock, with one of its Agents beside it: built once."""


# -- the Namespace lock ---------------------------------------------------------------------------


def lock_namespace(session: orm.Session, namespace_id: str) -> namespaces.Namespace | None:
    """The Namespace under a shared row lock (Agent admissions take it before the Agent row).

    Shared locks let admissions of different Agents run side by side, while a Namespace
    deletion (``FOR UPDATE``) or status change waits for them, and they for it.
    """
    return namespaces.get(session, namespace_id, shared=True)


def lock_namespace_reading(
    session: orm.Session, namespace_id: str, agent_id: str
) -> tuple[namespaces.Namespace | None, Agent | None]:
    """``lock_namespace`` and the Namespace's Agent ``agent_id`` (not locked) in one
    statement: the Namespace (``None``: no such row) and the Agent (``None``: not in it)."""
    row = (
        session.execute(_NAMESPACE_AND_AGENT, {"namespace_id": namespace_id, "agent_id": agent_id})
        .mappings()
        .first()
    )
    if row is None:
        return None, None
    namespace = namespaces.of_columns(rows.unprefixed(row, _NAMESPACE_PREFIX))
    agent_columns = rows.unprefixed(row, _AGENT_PREFIX)
    return namespace, None if agent_columns["id"] is None else _VALUES.make(agent_columns)


# -- Agents -------------------------------------------------------------------------------------


def insert(
    session: orm.Session,
    *,
    agent_id: str,
    namespace_id: str,
    name: str,
    configuration_id: str,
    harness_id: str,
    harness_version: str,
    execution_mode: str,
    harness_auth_secret_id: str | None,
    compute_driver: str,
    harness_auth_account_id: str | None = None,
    service_principal_id: str,
) -> Agent:
    """A new Agent: status ``active``, desired ``stopped``, no active revision.

    The service principal must be written in the same transaction (the foreign keys between
    the two are deferred to commit).

    Raises:
        Conflict: the Namespace already has an Agent with this name.
    """
    statement = _VALUES.insert(
        id=agent_id,
        namespace_id=namespace_id,
        name=name,
        configuration_id=configuration_id,
        harness_id=harness_id,
        harness_version=harness_version,
        execution_mode=execution_mode,
        harness_auth_secret_id=harness_auth_secret_id,
        harness_auth_account_id=harness_auth_account_id,
        compute_driver=compute_driver,
        service_principal_id=service_principal_id,
        status=AgentStatus.ACTIVE,
        desired_runtime_state=DesiredRuntimeState.STOPPED,
    ).on_conflict_do_nothing(constraint=_NAME_KEY)
    agent = _VALUES.returned(session, statement)
    if agent is None:
        raise errors.Conflict("an Agent with this name already exists in the Namespace")
    return agent


get: Final = _VALUES.get_in
"""The Agent of this Namespace (``session, namespace_id, agent_id``), or ``None``; ``lock``
takes its row lock (``FOR UPDATE``)."""

list_in: Final = _VALUES.list_in
"""The Namespace's Agents in creation order (``session, namespace_id``; those in ``window``)."""


def update_draft(session: orm.Session, agent_id: str, changes: Mapping[str, Any]) -> Agent:
    """Change draft columns (``DRAFT_FIELDS``) of a locked Agent; revisions are unaffected.

    Raises:
        Conflict: the new name is taken in the Namespace.
    """
    unknown = set(changes) - DRAFT_FIELDS
    if unknown:
        raise ValueError(f"not draft fields: {sorted(unknown)}")
    try:
        return _update(session, agent_id, **changes)
    except sa_exc.IntegrityError as exc:
        if db.violated_constraint(exc) == _NAME_KEY:
            raise errors.Conflict(
                "an Agent with this name already exists in the Namespace"
            ) from None
        raise


def set_desired_state(session: orm.Session, agent_id: str, desired: str) -> Agent:
    """Set ``desired_runtime_state`` (``running`` or ``stopped``) of a locked Agent."""
    if desired not in set(DesiredRuntimeState):
        raise ValueError(f"unknown desired runtime state {desired!r}")
    return _update(session, agent_id, desired_runtime_state=DesiredRuntimeState(desired))


def mark_deleting(session: orm.Session, agent_id: str) -> Agent:
    """Move a locked Agent to ``deleting`` with desired state ``stopped``."""
    return _update(
        session,
        agent_id,
        status=AgentStatus.DELETING,
        desired_runtime_state=DesiredRuntimeState.STOPPED,
    )


def count_by_status(session: orm.Session) -> dict[AgentStatus, int]:
    """How many Agents are in each lifecycle status (every status, zero included)."""
    counted = session.execute(
        sa.select(_AGENTS.c.status, sa.func.count()).group_by(_AGENTS.c.status)
    ).all()
    counts = dict.fromkeys(AgentStatus, 0)
    counts.update({AgentStatus(status): int(count) for status, count in counted})
    return counts


requeue_deletion: Final = finalizers.requeue_deletion
"""Requeue a permanently failed Agent deletion (``session, work_id, actor_id``) for the actor;
False unless the item is ``failed_permanent`` and its Agent is still deleting."""


# -- worker-side moves of the active pointer ----------------------------------------------------


def activate(session: orm.Session, agent_id: str, *, expected: str | None, candidate: str) -> bool:
    """Compare-and-set the active revision from ``expected`` to ``candidate``.

    Only while the Agent is active and desires running; False when anything moved on.
    """
    statement = rows.touched(
        _AGENTS,
        _AGENTS.c.id == agent_id,
        _AGENTS.c.status == AgentStatus.ACTIVE,
        _AGENTS.c.desired_runtime_state == DesiredRuntimeState.RUNNING,
        _AGENTS.c.active_revision_id.is_not_distinct_from(expected),
        active_revision_id=candidate,
        endpoint=None,
    )
    return rows.changed(session, statement)


def publish_endpoint(
    session: orm.Session, agent_id: str, revision_id: str, endpoint: str | None
) -> bool:
    """Record where the active revision serves; False if it is no longer the active one."""
    return _while_active(session, agent_id, revision_id, endpoint=endpoint)


def clear_active(session: orm.Session, agent_id: str, revision_id: str) -> bool:
    """Clear the active pointer only if it still names ``revision_id`` (compare-and-clear)."""
    return _while_active(session, agent_id, revision_id, active_revision_id=None, endpoint=None)


# -- helpers ------------------------------------------------------------------------------------


def _while_active(session: orm.Session, agent_id: str, revision_id: str, **values: Any) -> bool:
    """Set ``values`` on the Agent if ``revision_id`` is still its active revision; whether it
    was."""
    active = (_AGENTS.c.id == agent_id, _AGENTS.c.active_revision_id == revision_id)
    return rows.changed(session, rows.touched(_AGENTS, *active, **values))


def _update(session: orm.Session, agent_id: str, **values: Any) -> Agent:
    statement = rows.touched(_AGENTS, _AGENTS.c.id == agent_id, **values).returning(*_AGENTS.c)
    return _VALUES.make(session.execute(statement).mappings().one())
