"""Deployments: the write of an admitted deploy (one statement under the Agent's row lock) and
the reads of a revision's deployment item.

A deploy checks everything it can without a lock first (IAM, the Namespace, the Agent's draft,
the Configuration to pin). ``write`` then runs the named statement of ``sql/deploys.sql``: it
locks the Agent, takes the next revision number from its counter and sets desired ``running``,
inserts the immutable revision, its ``revision_reconcile`` work item and the ``agents.deploy``
audit event, all only while the Agent is active and still holds the draft the checks saw. The
lock is held for one round trip and the commit. Never commits (the caller's transaction does;
a rollback gives the number back, so numbers stay gap-free). A revision's deployment is its
``revision_reconcile`` item: ``deployment`` reads it, ``pending_successor`` finds a newer
revision of the Agent whose deployment is still under way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import sqlalchemy as sa
from sqlalchemy import orm

from occ.foundation import codes
from occ.state import (
    agents,
    configurations,
    models,
    queries,
    revisions,
    values,
    work_keys,
    work_queue,
)

SQL: Final = queries.load("deploys.sql")
KIND: Final = work_keys.WorkKind.REVISION_RECONCILE
"""The kind of a revision's deployment item."""
ACTIVATED: Final = (codes.Code.REVISION_ACTIVATED, codes.Code.REVISION_ALREADY_ACTIVE)
"""The codes a deployment that activated its revision ends with."""
_REVISIONS: Final = cast(sa.Table, models.AgentRevision.__table__)
_WORK: Final = cast(sa.Table, models.ControllerWork.__table__)


@dataclass(frozen=True, kw_only=True)
class DeployPlan:
    """What a deploy checked and will pin: the Agent as read, the caller, the Configuration and
    the harness-auth reference; ``revision_id`` names the revision to write."""

    revision_id: str
    agent: agents.Agent
    actor_id: str
    configuration: configurations.PinnedConfiguration
    harness_auth: Mapping[str, Any]
    revision_limit: int
    """The most revisions an Agent may make by default; its Namespace's own quota, when an
    administrator set one, wins (read by the write itself)."""

    @property
    def work_key(self) -> work_keys.WorkKey:
        """The deployment item the revision gets."""
        return _deployment_key(self.revision_id)


@dataclass(frozen=True, kw_only=True)
class DeployWritten:
    """What ``write`` wrote: the revision and the desired state the Agent had before."""

    revision: revisions.Revision
    previous_desired_runtime_state: agents.DesiredRuntimeState


def write(session: orm.Session, plan: DeployPlan, event: Mapping[str, Any]) -> DeployWritten | None:
    """Write the plan's revision, work and ``event`` (``audit.parameters``; the statement adds
    ``revisionNumber`` and ``previousDesiredRuntimeState`` to its details).

    ``None`` when nothing was written: the Agent is missing, deleting, its draft is no longer
    the plan's, or it has made its quota of revisions. The row lock, when the row
    exists, is held either way, so checking again and writing again cannot race another
    change.
    """
    agent, key = plan.agent, plan.work_key
    owner = values.WorkOwner(
        namespace_id=agent.namespace_id,
        actor_id=plan.actor_id,
        agent_id=agent.id,
        revision_id=plan.revision_id,
    )
    item = work_queue.item_parameters(key, owner)
    if any(event[name] != item[name] for name in ("work_id", "actor_id", "namespace_id")):
        raise ValueError("the event must name the plan's work, caller and Namespace")
    params = {
        **{name: value for name, value in event.items() if name != "kind"},
        **item,
        "event_kind": event["kind"],
        "revision_id": plan.revision_id,
        "configuration_id": plan.configuration.id,
        "configuration_generation": plan.configuration.generation,
        "configuration_document": _json(plan.configuration.document),
        "harness_id": agent.harness_id,
        "harness_version": agent.harness_version,
        "execution_mode": agent.execution_mode,
        "harness_auth_secret_id": agent.harness_auth_secret_id,
        "harness_auth_account_id": agent.harness_auth_account_id,
        "compute_driver": agent.compute_driver,
        "service_principal_id": agent.service_principal_id,
        "harness_auth": _json(plan.harness_auth),
        "revision_limit": plan.revision_limit,
    }
    row = session.execute(SQL["write_deploy"], params).mappings().first()
    if row is None:
        return None
    return DeployWritten(
        revision=revisions.record(row),
        previous_desired_runtime_state=agents.DesiredRuntimeState(
            row["previous_desired_runtime_state"]
        ),
    )


def deployment(session: orm.Session, revision_id: str) -> values.WorkItem | None:
    """The revision's deployment item, or ``None``."""
    return work_queue.get(session, _deployment_key(revision_id))


def pending_successor(session: orm.Session, agent_id: str, revision_number: int) -> str | None:
    """The newest revision of the Agent after ``revision_number`` whose deployment is still
    under way (admitted: queued or claimed), or ``None``."""
    return _newest_deployed(
        session,
        agent_id,
        _REVISIONS.c.revision_number > revision_number,
        _WORK.c.state.in_((values.WorkState.QUEUED, values.WorkState.CLAIMED)),
    )


def last_succeeded(session: orm.Session, agent_id: str, revision_number: int) -> str | None:
    """The newest revision of the Agent before ``revision_number`` whose deployment
    succeeded in activating it (``REVISION_ACTIVATED`` / ``REVISION_ALREADY_ACTIVE``), or
    ``None``."""
    return _newest_deployed(
        session,
        agent_id,
        _REVISIONS.c.revision_number < revision_number,
        _WORK.c.state == values.WorkState.SUCCEEDED,
        _WORK.c.reason_code.in_(ACTIVATED),
    )


def _newest_deployed(
    session: orm.Session, agent_id: str, *conditions: sa.ColumnElement[bool]
) -> str | None:
    """The newest revision of the Agent whose deployment item meets ``conditions``, or
    ``None``."""
    statement = (
        sa.select(_REVISIONS.c.id)
        .join(
            _WORK,
            (_WORK.c.agent_id == _REVISIONS.c.agent_id) & (_WORK.c.revision_id == _REVISIONS.c.id),
        )
        .where(_REVISIONS.c.agent_id == agent_id, _WORK.c.kind == KIND, *conditions)
        .order_by(_REVISIONS.c.revision_number.desc())
        .limit(1)
    )
    found: str | None = session.execute(statement).scalar_one_or_none()
    return found


def _deployment_key(revision_id: str) -> work_keys.WorkKey:
    return work_keys.WorkKey(KIND, revision_id)


def _json(document: Mapping[str, Any]) -> str:
    return json.dumps(dict(document), separators=(",", ":"))
