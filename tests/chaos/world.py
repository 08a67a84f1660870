"""The chaos run's workload: lanes of work admitted through occ's use cases, as the API would.

A lane is a Namespace (one ``ready`` item) or an Agent (deploys, a stop, more deploys, then its
deletion, one after another). ``Workload.plan`` spreads the admissions of ``items`` work items
over ``duration_s`` with a seeded generator; ``World`` creates the Installation, the Agents'
home Namespaces (set ``ready`` directly: Namespace reconciliation has lanes of its own) with
their Configuration, Secret and grants, and admits each step. Every admitted work id is
recorded with its lane and admission time for the checker.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field

import sqlalchemy as sa

from occ.controller import agent_lifecycle, deployments, installation, namespaces
from occ.state import models, secret_store
from occ.state import namespaces as namespace_rows
from occ.state.db import Database
from tests.support import worlds

AGENT_STEPS = ("deploy", "deploy", "stop", "deploy", "deploy", "delete")
"""What one Agent lane admits, in order (the last step ends the lane)."""


@dataclass(frozen=True)
class Step:
    at_s: float
    lane: int
    action: str  # "namespace" or one of AGENT_STEPS


@dataclass(frozen=True)
class Admitted:
    work_id: str
    lane: str
    kind: str
    admitted_at: float  # time.time()


@dataclass(frozen=True)
class Workload:
    steps: tuple[Step, ...]
    namespace_lanes: int
    agent_lanes: int

    @classmethod
    def plan(cls, rng: random.Random, *, items: int, duration_s: float) -> Workload:
        """About half the items on Agent lanes (six steps each), the rest on Namespaces."""
        agent_lanes = max(1, (items // 2) // len(AGENT_STEPS))
        namespace_lanes = max(1, items - agent_lanes * len(AGENT_STEPS))
        steps = [
            Step(rng.uniform(0, duration_s), lane, "namespace") for lane in range(namespace_lanes)
        ]
        for lane in range(agent_lanes):
            times = sorted(rng.uniform(0, duration_s) for _ in AGENT_STEPS)
            steps += [
                Step(at, namespace_lanes + lane, action)
                for at, action in zip(times, AGENT_STEPS, strict=True)
            ]
        return cls(tuple(sorted(steps, key=lambda s: s.at_s)), namespace_lanes, agent_lanes)

    @property
    def items(self) -> int:
        return len(self.steps)


@dataclass
class AgentLane:
    namespace_id: str
    agent_id: str
    revisions: list[str] = field(default_factory=list)


@dataclass
class World:
    db: Database
    admin: str
    secret_value: str
    agents: dict[int, AgentLane] = field(default_factory=dict)
    admitted: list[Admitted] = field(default_factory=list)

    @classmethod
    def create(cls, db: Database, workload: Workload, secret_key: str) -> World:
        boot = installation.bootstrap_installation(db, name="chaos", admin_name="admin")
        assert boot.admin_principal_id is not None
        world = cls(db=db, admin=boot.admin_principal_id, secret_value="sk-chaos-never-logged")
        for lane in range(
            workload.namespace_lanes, workload.namespace_lanes + workload.agent_lanes
        ):
            world.agents[lane] = world._agent_lane(lane, secret_key)
        return world

    def _agent_lane(self, lane: int, secret_key: str) -> AgentLane:
        db, admin = self.db, self.admin
        namespace_id = namespaces.create_namespace(
            db, admin, namespaces.CreateNamespace(name=f"home-{lane}")
        ).id
        with db.transaction() as session:
            # its own work item then finds it ready; it is not one of the run's items
            namespace_rows.transition(
                session, namespace_id, expected="provisioning", status="ready"
            )
        [made] = worlds.make(
            db,
            admin=admin,
            namespace_id=namespace_id,
            compute_driver="local",
            store=secret_store.SecretStore(secret_key),
            secret_value=self.secret_value,
            document={"m": "x"},
            agent_names=(f"agent-{lane}",),
        )
        return AgentLane(namespace_id, made.agent_id)

    def admit(self, step: Step) -> Admitted:
        """Admit one step and record its work id."""
        if step.action == "namespace":
            namespace_id = namespaces.create_namespace(
                self.db, self.admin, namespaces.CreateNamespace(name=f"ns-{uuid.uuid4().hex[:10]}")
            ).id
            return self._record(f"namespace:{namespace_id}:reconcile:ready", namespace_id, step)
        lane = self.agents[step.lane]
        ids = {"namespace_id": lane.namespace_id, "agent_id": lane.agent_id}
        if step.action == "deploy":
            command = deployments.Deploy(**ids)
            revision_id = deployments.deploy_agent(self.db, self.admin, command).deployment_id
            lane.revisions.append(revision_id)
            return self._record(f"agent_revision:{revision_id}:reconcile", lane.agent_id, step)
        if step.action == "stop":
            known = self._stop_items(lane.agent_id)
            agent_lifecycle.stop_agent(self.db, self.admin, agent_lifecycle.StopAgent(**ids))
            [work_id] = sorted(self._stop_items(lane.agent_id) - known)
            return self._record(work_id, lane.agent_id, step)
        agent_lifecycle.delete_agent(
            self.db,
            self.admin,
            agent_lifecycle.DeleteAgent(namespace_id=lane.namespace_id, agent_id=lane.agent_id),
        )
        return self._record(f"agent:{lane.agent_id}:reconcile:deleted", lane.agent_id, step)

    def _stop_items(self, agent_id: str) -> set[str]:
        with self.db.transaction() as session:
            return set(
                session.execute(
                    sa.select(models.ControllerWork.id).where(
                        models.ControllerWork.agent_id == agent_id,
                        models.ControllerWork.id.like("agent:%:reconcile:stopped:%"),
                    )
                ).scalars()
            )

    def _record(self, work_id: str, lane: str, step: Step) -> Admitted:
        admitted = Admitted(work_id, lane, step.action, time.time())
        self.admitted.append(admitted)
        return admitted
