"""A fleet of running Agents for ``fleet.py``, made in bulk: rows in PostgreSQL, objects in the
fake Kubernetes API server, as occ's own deploys would have left them.

The rows come from ``tests.support.fleets`` (Namespaces of a hundred Agents, each running one active
``kubernetes`` revision, observed ready); ``objects`` puts each Agent's gateway (Namespace,
ServiceAccount, ConfigMap, Secret, PVC, Service, Deployment) in the fake with the kubernetes
driver's own manifests, and marks each rollout done, so an observation finds every Agent healthy.
Neither goes through occ's passes: the benchmark measures observing a fleet, not deploying one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from bench import kube_seed
from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import manifests, naming
from occ.state.db import Database
from tests.support.kube_api import FakeKubeAPI

PREFIX: Final = "occ-"

_REVISIONS: Final = sa.text("""
    SELECT r.id, r.namespace_id, r.agent_id, a.endpoint
      FROM occ.agent_revisions r JOIN occ.agents a ON a.active_revision_id = r.id
""")


@dataclass(frozen=True)
class Member:
    """One running Agent of the fleet, as a driver sees its revision."""

    spec: base.RevisionSpec
    kubernetes_namespace: str


def members(database: Database) -> list[Member]:
    """Every running Agent's revision, as the kubernetes driver's specs."""
    with database.transaction() as session:
        found = session.execute(_REVISIONS).all()
    return [
        Member(
            kube_seed.first_revision(
                row.namespace_id,
                agent_id=row.agent_id,
                revision_id=row.id,
                service_principal_id="prn_unused",
                model="fleet",
            ),
            naming.kubernetes_namespace(PREFIX, row.namespace_id),
        )
        for row in found
    ]


def objects(fake: FakeKubeAPI, fleet: list[Member], options: manifests.GatewayOptions) -> None:
    """The objects occ's deploys would have made for ``fleet``, each rollout done."""
    made: set[str] = set()
    for member in fleet:
        namespace = member.kubernetes_namespace
        if namespace not in made:
            kube_seed.seed_namespace(fake, namespace, member.spec.namespace_id)
            made.add(namespace)
        kube_seed.seed_agent(fake, member.spec, namespace, options)
    for namespace in made:
        kube_seed.seed_endpoints(fake, namespace)


def publish_endpoints(owner: Database, fleet: list[Member]) -> None:
    """Publish each Agent's endpoint as activation would have (its Service's address)."""
    with owner.transaction() as session:
        session.execute(
            sa.text("UPDATE occ.agents SET endpoint = :endpoint WHERE id = :agent_id"),
            [
                {
                    "agent_id": member.spec.agent_id,
                    "endpoint": manifests.endpoint(member.spec, member.kubernetes_namespace),
                }
                for member in fleet
            ],
        )
