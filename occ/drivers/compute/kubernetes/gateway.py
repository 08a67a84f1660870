"""The Agent's gateway Deployment: find it, apply it around the launch hooks, start a dedicated one.

Applying a Deployment that launches a workload runs the ``before_workload_start`` hooks first
and revokes what they granted (``compensate_workload_start``) when the write fails or the
launch is observed ``Failed``. A dedicated revision's gateway starts only once every other
gateway of the Agent is scaled to zero (they share the Agent's ReadWriteOnce volume).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute import hooks as lifecycle
from occ.drivers.compute.kubernetes import ensure, kinds, manifests, naming, rollout


@dataclass(frozen=True)
class Gateways:
    """The gateway Deployments of one cluster, written through ``steps`` from ``options``."""

    steps: ensure.Steps
    options: manifests.GatewayOptions

    def running(self, revision: base.RevisionSpec, namespace: str) -> dict[str, Any] | None:
        """The Deployment running ``revision`` (embedded: only while its template does)."""
        current = self.steps.owned(
            kinds.DEPLOYMENT,
            namespace,
            manifests.deployment_name(revision),
            manifests.gateway_labels(revision),
        )
        if current is None:
            return None
        if (
            manifests.mode_of(revision) == naming.EMBEDDED
            and rollout.template_revision(current) != revision.revision_id
        ):
            return None  # the Agent's gateway runs another revision now
        return current

    def apply(
        self,
        hooks: lifecycle.HookDispatcher,
        operation: base.Operation,
        revision: base.RevisionSpec,
        namespace: str,
        *,
        replicas: int,
        launch: bool = True,
    ) -> dict[str, Any]:
        """The revision's gateway Deployment converged to ``replicas`` (``launch``: through
        the launch hooks, whose grants are revoked when the write fails)."""
        environment: Mapping[str, str] = {}
        if launch and hooks:
            environment = hooks.before_workload_start(operation, revision)
        desired = manifests.gateway_deployment(
            revision, namespace, self.options, replicas=replicas, environment=environment
        )
        try:
            return self.steps.applied(operation, kinds.DEPLOYMENT, namespace, desired)
        except BaseException:
            if launch and hooks:  # the launch did not happen: revoke what the hooks granted
                hooks.compensate_workload_start(operation, revision)
            raise

    def start_dedicated(
        self,
        hooks: lifecycle.HookDispatcher,
        operation: base.Operation,
        revision: base.RevisionSpec,
        namespace: str,
    ) -> base.Observation:
        """Start the dedicated revision's own gateway once the Agent's others are stopped;
        ``Pending`` while one still runs, else the rollout's observation."""
        own = manifests.deployment_name(revision)
        for other in self.steps.api.find(
            kinds.DEPLOYMENT, namespace, naming.owned_by_agent(revision.agent_id)
        ):
            if ensure.metadata(other).get("name") == own:
                continue
            spec, status = other.get("spec") or {}, other.get("status") or {}
            if (spec.get("replicas") or 0) > 0 or (status.get("replicas") or 0) > 0:
                return base.Pending("an earlier revision's gateway still runs")
        deployment = self.apply(hooks, operation, revision, namespace, replicas=1)
        verdict = rollout.deployment_verdict(deployment, revision.revision_id)
        observation = rollout.observation(verdict)
        revoke_failed_launch(hooks, operation, revision, observation)
        return observation


def revoke_failed_launch(
    hooks: lifecycle.HookDispatcher,
    operation: base.Operation,
    revision: base.RevisionSpec,
    observation: base.Observation,
) -> None:
    """A launch observed ``Failed`` revokes what ``before_workload_start`` granted."""
    if isinstance(observation, base.Failed) and hooks:
        hooks.compensate_workload_start(operation, revision)
