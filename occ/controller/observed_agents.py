"""An Agent as the API shows it: the Agent row with what the workers last observed of its runtime.

A projection, not an entity: the frozen ``occ.state.agents.Agent`` stays as stored, and
``ObservedAgent`` adds the runtime status of its active revision (``ready``, ``degraded``, or
``unknown`` when nothing observed it). Reads the observation in the caller's session, so the
Agent and its runtime come from the same snapshot; never writes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence

from occ.state import agents, runtime_observations
from occ.state.db import Session

RuntimeStatus = runtime_observations.RuntimeStatus


@dataclasses.dataclass(frozen=True, kw_only=True)
class ObservedAgent(agents.Agent):
    """The Agent and the last observation of its active revision.

    ``runtime_observed_at`` and ``runtime_reason_code`` are ``None`` while the status is
    ``unknown`` (no active revision, or none observed yet).
    """

    runtime_status: RuntimeStatus
    runtime_observed_at: dt.datetime | None
    runtime_reason_code: str | None


def observe(session: Session, agent: agents.Agent) -> ObservedAgent:
    """The Agent with its runtime observation, read in ``session``."""
    [observed] = observe_all(session, [agent])
    return observed


def observe_all(session: Session, items: Sequence[agents.Agent]) -> list[ObservedAgent]:
    """The Agents with their runtime observations, in order (one query for all of them)."""
    observations = runtime_observations.of_agents(session, [agent.id for agent in items])
    return [_paired(agent, observations.get(agent.id)) for agent in items]


def _paired(
    agent: agents.Agent, observation: runtime_observations.RuntimeObservation | None
) -> ObservedAgent:
    status = runtime_observations.status_of(observation, agent.active_revision_id)
    seen = observation if status != RuntimeStatus.UNKNOWN else None
    columns = {field.name: getattr(agent, field.name) for field in dataclasses.fields(agent)}
    return ObservedAgent(
        **columns,
        runtime_status=status,
        runtime_observed_at=None if seen is None else seen.observed_at,
        runtime_reason_code=None if seen is None else seen.reason_code,
    )
