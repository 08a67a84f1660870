"""Agent stop and delete work run in-process: the original actor is re-authorized under the
claim, and a refusal fails the item and audits the denial before any Compute call."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from occ.controller import agent_lifecycle
from occ.state import models, values
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support import worlds

POLICY = values.QueuePolicy()

Admit = Callable[[Database, str, str, str], object]
"""Admit a change of an Agent (``db, actor_id, namespace_id, agent_id``)."""


def stop(db: Database, actor_id: str, namespace_id: str, agent_id: str) -> object:
    command = agent_lifecycle.StopAgent(namespace_id=namespace_id, agent_id=agent_id)
    return agent_lifecycle.stop_agent(db, actor_id, command)


def delete(db: Database, actor_id: str, namespace_id: str, agent_id: str) -> object:
    command = agent_lifecycle.DeleteAgent(namespace_id=namespace_id, agent_id=agent_id)
    return agent_lifecycle.delete_agent(db, actor_id, command)


@pytest.mark.parametrize(
    ("admit", "permission", "action"),
    [(stop, "agent:operate", "agents.stop"), (delete, "agent:delete", "agents.delete")],
    ids=["stop", "delete"],
)
def test_an_actor_refused_after_admission_fails_the_item_without_compute(
    db: Database, tmp_path: Path, admit: Admit, permission: str, action: str
) -> None:
    world = support.ready_world(db)
    admit(db, world.admin, world.namespace_id, world.agent_id)
    # allowed at admission, no longer when the worker runs
    worlds.restrict_admin(db, world, permission)

    driver, claim, result = support.run_the_one_item(db, tmp_path, POLICY)

    assert result is not None and result.code == "AUTHORIZATION_DENIED"
    assert driver.effects() == []
    with db.transaction() as session:
        work = session.get(models.ControllerWork, claim.work_id)
        assert work is not None and work.state == "failed_permanent"
    assert support.denials(db, claim.work_id) == [action]
