"""What the deploy benchmarks (``docker_bench.py``, ``kubernetes_bench.py``) share: the fleet's
environment, the Installation's administrator, Namespaces of Agents with their grants, and one
deploy per Agent timed from its admission to its activation audit row."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from bench import workers
from bench.support import BenchError, percentile
from occ.controller import deployments, installation, namespaces
from occ.state import models, secret_store
from occ.state.db import Database
from occ.tasks import nudge
from tests.support import databases, processes, worlds

READY_TIMEOUT_S = 120.0
API_KEY_PEPPER = "bench-pepper"


@dataclass(frozen=True)
class Deploys:
    """What one deploy phase measured (the docker floor's starts have no revisions)."""

    per_s: float
    latencies_ms: list[float]
    revision_ids: list[str]

    def figures(self, prefix: str) -> dict[str, float]:
        """``{prefix}_deploys_per_s`` and the median and p99 latency (``_deploy_p50_ms``,
        ``_deploy_p99_ms``)."""
        return {
            f"{prefix}_deploys_per_s": self.per_s,
            f"{prefix}_deploy_p50_ms": self.p50_ms,
            f"{prefix}_deploy_p99_ms": self.p99_ms,
        }

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.latencies_ms)

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies_ms, 0.99)


def versus(label: str, ours: Deploys, theirs: Deploys) -> str:
    """``label: throughput R, p50 Rx, p99 Rx``: ``ours`` as a multiple of ``theirs``."""
    return (
        f"{label}: throughput {ours.per_s / theirs.per_s:.2f}, "
        f"p50 {ours.p50_ms / theirs.p50_ms:.2f}x, p99 {ours.p99_ms / theirs.p99_ms:.2f}x"
    )


def fleet_env(
    urls: databases.DatabaseUrls, broker: str, directory: Path, secret_key: str
) -> dict[str, str]:
    """``workers.fleet_env`` with the Secret store's key and an API-key pepper."""
    env = workers.fleet_env(urls, broker, directory / "local")
    env.update(OCC_SECRET_KEY=secret_key, OCC_API_KEY_PEPPER=API_KEY_PEPPER)
    return env


def bootstrap(database: Database) -> str:
    """Bootstrap the Installation; its administrator's principal id."""
    boot = installation.bootstrap_installation(database, name="bench", admin_name="admin")
    assert boot.admin_principal_id is not None
    return boot.admin_principal_id


def prepare_world(
    database: Database,
    env: dict[str, str],
    admin: str,
    *,
    driver: str,
    count: int,
    per_namespace: int,
    secret_key: str,
) -> tuple[list[tuple[str, str]], list[str]]:
    """Namespaces of ``per_namespace`` Agents each, made ready by the fleet, and ``count``
    Agents of ``driver`` with their grants; the (Namespace, Agent) pairs and the Namespaces."""
    namespace_ids = [
        namespaces.create_namespace(
            database, admin, namespaces.CreateNamespace(name=f"{driver}-{index}")
        ).id
        for index in range(math.ceil(count / per_namespace))
    ]
    processes.nudge(env)

    def ready() -> bool:
        with database.transaction() as session:
            statuses = session.execute(
                sa.select(models.Namespace.status).where(models.Namespace.id.in_(namespace_ids))
            ).scalars()
            return all(status == "ready" for status in statuses)

    workers.wait_for(
        ready, timeout=READY_TIMEOUT_S, message=f"the {driver} Namespaces to become ready"
    )
    pairs: list[tuple[str, str]] = []
    for index in range(count):
        namespace_id = namespace_ids[index // per_namespace]
        if index % per_namespace == 0:
            resources = worlds.namespace_resources(
                database,
                admin=admin,
                namespace_id=namespace_id,
                store=secret_store.SecretStore(secret_key),
                secret_value="sk-bench",
                document={"model": "m"},
            )
        agent = worlds.bound_agent(
            database,
            admin=admin,
            namespace_id=namespace_id,
            resources=resources,
            compute_driver=driver,
            name=f"agent-{index}",
        )
        pairs.append((namespace_id, agent.id))
    return pairs, namespace_ids


def deploy_all(
    database: Database,
    nudger: nudge.Nudger,
    admin: str,
    pairs: list[tuple[str, str]],
    fleet: workers.Fleet,
    *,
    timeout: float,
) -> Deploys:
    """Admit one deploy per Agent (a nudge after each, what the API does); wait until every
    one is active. A deploy's latency runs from right after its admission committed to the
    ``occurred_at`` of its activation audit row."""
    admitted: dict[str, float] = {}
    for namespace_id, agent_id in pairs:
        accepted = deployments.deploy_agent(
            database, admin, deployments.Deploy(namespace_id=namespace_id, agent_id=agent_id)
        )
        admitted[accepted.deployment_id] = time.time()
        nudger.send_now()

    def activations() -> dict[str, float] | None:
        fleet.check()
        with database.transaction() as session:
            failed = session.execute(
                sa.select(models.ControllerWork.id, models.ControllerWork.reason_code).where(
                    models.ControllerWork.state == "failed"
                )
            ).all()
            if failed:
                raise BenchError(f"work failed: {[tuple(row) for row in failed[:5]]}")
            rows = session.execute(
                sa.select(models.AuditEvent.resource_id, models.AuditEvent.occurred_at).where(
                    models.AuditEvent.action == "agents.lifecycle.activate",
                    models.AuditEvent.resource_id.in_(admitted),
                )
            ).all()
        found = {row.resource_id: row.occurred_at.timestamp() for row in rows}
        return found if len(found) == len(admitted) else None

    done = workers.wait_for(
        activations, timeout=timeout, interval=0.1, message="every deploy active"
    )
    latencies = [(done[rev] - at) * 1000 for rev, at in admitted.items()]
    elapsed = max(done.values()) - min(admitted.values())
    return Deploys(len(admitted) / elapsed, latencies, list(admitted))


def work_ids(revision_ids: list[str]) -> set[str]:
    """The deploy work of these revisions."""
    return {f"agent_revision:{revision}:reconcile" for revision in revision_ids}


def passes(fleet: workers.Fleet, revision_ids: list[str]) -> list[float]:
    """Durations (ms) of the driver worker's passes over these revisions' deploy work."""
    return workers.driver_durations(fleet, work_ids(revision_ids))
