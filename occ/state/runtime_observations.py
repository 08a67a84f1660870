"""What the workers last observed of each Agent's active revision: ``ready`` or ``degraded``,
and how its repairs are spaced.

One row per Agent (``agent_runtime``), upserted by deploy and repair passes in their fenced
publication and by the fleet observer when what it sees changed, removed with the Agent. A
``ready`` observation clears the repair count; ``admit_repair`` counts one more and says when
the next may come. Takes the caller's session and never commits.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, cast

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import postgresql as pg

from occ.state import agents as agent_rows
from occ.state import models, rows

_TABLE: Final = cast(sa.Table, models.AgentRuntime.__table__)
_NOW: Final = sa.func.clock_timestamp()


class RuntimeStatus(enum.StrEnum):
    """What an Agent's runtime was last seen to be."""

    READY = "ready"
    DEGRADED = "degraded"
    UNKNOWN = "unknown"
    """No observation of the active revision yet (or no active revision)."""


@dataclass(frozen=True, kw_only=True)
class RuntimeObservation:
    """The last observation of an Agent's runtime."""

    agent_id: str
    revision_id: str
    status: RuntimeStatus
    reason_code: str
    observed_at: dt.datetime


_VALUES: Final = rows.Values(_TABLE, RuntimeObservation, convert={"status": RuntimeStatus})


def record(
    session: orm.Session, agent_id: str, revision_id: str, status: RuntimeStatus, reason_code: str
) -> None:
    """Replace the Agent's observation (``ready`` or ``degraded``) with this one, now."""
    if status == RuntimeStatus.UNKNOWN:
        raise ValueError("unknown is the absence of an observation, not one")
    values: dict[str, object] = {
        "revision_id": revision_id,
        "status": status,
        "reason_code": reason_code,
    }
    if status == RuntimeStatus.READY:
        values.update(repairs=0, repair_after=None)  # a ready runtime needs no repair
    _replace(session, agent_id, values)


def admit_repair(
    session: orm.Session,
    agent_id: str,
    revision_id: str,
    reason_code: str,
    *,
    spacing_ms: Callable[[int], int],
) -> int:
    """Record the runtime ``degraded`` with ``reason_code`` and one more repair, the next one
    allowed ``spacing_ms(repairs)`` after now; the repair's number (1 for the first)."""
    repairs = sa.func.coalesce(
        sa.select(_TABLE.c.repairs)
        .where(_TABLE.c.agent_id == agent_id, _TABLE.c.revision_id == revision_id)
        .scalar_subquery(),
        0,
    )
    count = session.execute(sa.select(repairs + 1)).scalar_one()
    values = {
        "revision_id": revision_id,
        "status": RuntimeStatus.DEGRADED,
        "reason_code": reason_code,
        "repairs": count,
        "repair_after": _NOW + sa.func.make_interval(0, 0, 0, 0, 0, 0, spacing_ms(count) / 1000),
    }
    _replace(session, agent_id, values)
    return int(count)


def reset_repairs(session: orm.Session, agent_id: str, revision_id: str) -> None:
    """Count the repairs of the Agent's runtime afresh, the next one allowed now (a person
    asked for a repair); nothing when no observation of ``revision_id`` is recorded."""
    session.execute(
        sa.update(_TABLE)
        .where(_TABLE.c.agent_id == agent_id, _TABLE.c.revision_id == revision_id)
        .values(repairs=0, repair_after=None)
    )


def of_agents(session: orm.Session, agent_ids: list[str]) -> dict[str, RuntimeObservation]:
    """The observations of these Agents, by Agent id (Agents never observed are absent)."""
    if not agent_ids:
        return {}
    observed = rows.every(session, _VALUES.select(_TABLE.c.agent_id.in_(agent_ids)), _VALUES.make)
    return {observation.agent_id: observation for observation in observed}


def status_of(
    observation: RuntimeObservation | None, active_revision_id: str | None
) -> RuntimeStatus:
    """The Agent's runtime status: the observation of its active revision, else unknown."""
    if observation is None or active_revision_id is None:
        return RuntimeStatus.UNKNOWN
    if observation.revision_id != active_revision_id:
        return RuntimeStatus.UNKNOWN
    return observation.status


@dataclass(frozen=True, kw_only=True)
class ActiveRevision:
    """An Agent that desires running and the revision its pointer names."""

    namespace_id: str
    agent_id: str
    revision_id: str
    actor_id: str
    """Who deployed the revision (maintenance work runs on their authority)."""


def active_revisions(session: orm.Session, compute_driver: str) -> list[ActiveRevision]:
    """Every running Agent's active revision on this Compute Driver: what maintenance observes."""
    agents = cast(sa.Table, models.Agent.__table__)
    revisions = cast(sa.Table, models.AgentRevision.__table__)
    query = (
        sa.select(
            revisions.c.namespace_id, revisions.c.agent_id, revisions.c.id, revisions.c.actor_id
        )
        .join(
            agents,
            sa.and_(
                agents.c.id == revisions.c.agent_id,
                agents.c.active_revision_id == revisions.c.id,
            ),
        )
        .where(
            agents.c.status == agent_rows.AgentStatus.ACTIVE,
            agents.c.desired_runtime_state == agent_rows.DesiredRuntimeState.RUNNING,
            revisions.c.compute_driver == compute_driver,
        )
        .order_by(revisions.c.agent_id)
    )
    return [
        ActiveRevision(
            namespace_id=row.namespace_id,
            agent_id=row.agent_id,
            revision_id=row.id,
            actor_id=row.actor_id,
        )
        for row in session.execute(query)
    ]


def _replace(session: orm.Session, agent_id: str, values: Mapping[str, object]) -> None:
    """Write the Agent's observation row of ``values``, observed now (inserted, or replacing
    the one it had)."""
    session.execute(
        pg.insert(_TABLE)
        .values(agent_id=agent_id, **values)
        .on_conflict_do_update(
            index_elements=[_TABLE.c.agent_id], set_={**values, "observed_at": _NOW}
        )
    )
