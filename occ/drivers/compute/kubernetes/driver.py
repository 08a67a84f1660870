"""The ``kubernetes`` Compute Driver: Namespaces as Kubernetes namespaces, Agents as gateways.

Per Agent: a ServiceAccount, a ReadWriteOnce state volume, a ClusterIP Service (the Agent's
endpoint) and a single-replica ``Recreate`` gateway Deployment; per revision: an immutable
configuration ConfigMap and a Secret holding the harness credential. Two modes:

* ``embedded`` (``openclaw``): one gateway Deployment per Agent. ``prepare_revision`` stages
  the revision's objects without touching the running template; ``activate_revision`` (after
  the database commit) applies the template for the new revision and reports its readiness.
* ``dedicated`` (``codex``): one gateway Deployment per revision, started by
  ``prepare_revision`` once earlier ones are stopped (they share the RWO volume);
  ``activate_revision`` points the Service at it.

Passes find everything again by name and label, never by memory (their only cache, Namespace
id to Kubernetes namespace, holds facts that never change). Bulk observations alone read the
``informer``'s watch cache, which the first one starts in the process.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute import hooks as lifecycle
from occ.drivers.compute.kubernetes import (
    access,
    client,
    configured,
    ensure,
    gateway,
    informer,
    kinds,
    manifests,
    namespaces,
    naming,
    observation,
    policies,
    rollout,
    startup,
)
from occ.settings.config import Settings

CREDENTIAL_MISSING: Final = "KUBERNETES_CREDENTIAL_MISSING"

MAINTENANCE_INTERVAL_S: Final = 60.0
"""How often active revisions are observed by default (rollout and ready endpoints)."""

EMBEDDED_CAPABILITIES: Final = base.Capabilities(
    activation_order=base.ActivationOrder.AFTER_COMMIT,
    maintenance_interval_s=MAINTENANCE_INTERVAL_S,
)
DEDICATED_CAPABILITIES: Final = base.Capabilities(
    activation_order=base.ActivationOrder.AFTER_COMMIT,
    requires_stopped_predecessors=True,
    maintenance_interval_s=MAINTENANCE_INTERVAL_S,
)


class KubernetesComputeDriver:
    """Namespaces and Agent revisions as objects on one Kubernetes cluster."""

    name = "kubernetes"
    capabilities = EMBEDDED_CAPABILITIES

    def __init__(
        self,
        api: client.KubernetesApi,
        *,
        options: manifests.GatewayOptions,
        policy: namespaces.Policy | None = None,
        network: policies.NetworkOptions | None = None,
        hooks: lifecycle.HookDispatcher | None = None,
        maintenance_interval_s: float = MAINTENANCE_INTERVAL_S,
    ) -> None:
        self.api = api
        self.capabilities = dataclasses.replace(
            EMBEDDED_CAPABILITIES, maintenance_interval_s=maintenance_interval_s
        )
        self._dedicated = dataclasses.replace(
            DEDICATED_CAPABILITIES, maintenance_interval_s=maintenance_interval_s
        )
        self.steps = ensure.Steps(api)
        self.options = options
        self.gateways = gateway.Gateways(self.steps, options)
        self.network = network if network is not None else policies.NetworkOptions()
        self.policy = policy if policy is not None else namespaces.Policy(prefix="occ-")
        self.hooks = hooks if hooks is not None else lifecycle.HookDispatcher()
        self._namespaces: dict[str, str] = {}
        self._lock = threading.Lock()
        self.informer = informer.Informer(
            api, namespaces=self.policy.managed if self.policy.tenant_scoped else None
        )
        api.stream_pool_size = max(api.stream_pool_size, self.informer.streams + 2)

    @classmethod
    def from_settings(
        cls, settings: Settings, *, hooks: lifecycle.HookDispatcher | None = None
    ) -> KubernetesComputeDriver:
        parts = configured.parts(settings)
        return cls(
            parts.api,
            hooks=hooks,
            options=parts.options,
            policy=parts.policy,
            network=parts.network,
            maintenance_interval_s=parts.maintenance_interval_s or MAINTENANCE_INTERVAL_S,
        )

    def revision_capabilities(self, revision: base.RevisionSpec) -> base.Capabilities:
        """Dedicated revisions share the Agent's RWO volume: predecessors stop first."""
        if manifests.mode_of(revision) == naming.DEDICATED:
            return self._dedicated
        return self.capabilities

    # -- preflight ------------------------------------------------------------------------

    def preflight(self) -> None:
        """Check the API server's version and that occ may do every verb it uses (cluster-wide,
        or in each managed namespace of a tenant-scoped installation)."""
        access.check(self.api, self.policy.installation, self.policy.managed)

    # -- Namespaces -----------------------------------------------------------------------

    def ensure_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        result = namespaces.ensure_infrastructure(self.steps, self.policy, operation, namespace)
        if isinstance(result, base.Pending):
            return result
        with self._lock:
            self._namespaces[namespace.id] = result
        self.hooks.after_namespace_prepared(operation, namespace)
        return base.Ready({"namespace": result})

    def delete_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        observation = namespaces.delete_infrastructure(
            self.steps,
            self.policy,
            operation,
            namespace,
            lambda: self.hooks.before_namespace_delete(operation, namespace),
        )
        if isinstance(observation, base.Ready):
            with self._lock:
                self._namespaces.pop(namespace.id, None)
        return observation

    def kubernetes_namespace(self, namespace_id: str) -> str | None:
        """The Kubernetes namespace of an occ Namespace (found by label once, then cached)."""
        with self._lock:
            known = self._namespaces.get(namespace_id)
        if known is not None:
            return known
        name = namespaces.find(self.api, self.policy, namespace_id)
        if name is not None:
            with self._lock:
                self._namespaces[namespace_id] = name
        return name

    def _required_namespace(self, namespace_id: str) -> str:
        name = self.kubernetes_namespace(namespace_id)
        if name is None:
            raise base.TransientDriverError(
                namespaces.NAMESPACE_MISSING, "the Namespace's Kubernetes namespace is not ready"
            )
        return name

    # -- revisions ------------------------------------------------------------------------

    def prepare_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Observation:
        """Stage the revision's objects; dedicated: also start and check its own gateway."""
        operation.check()
        namespace = self._required_namespace(revision.namespace_id)
        steps = self.steps
        steps.created(
            operation,
            kinds.CONFIG_MAP,
            namespace,
            manifests.configuration_map(revision, namespace),
        )
        self._stage_credential(operation, revision, namespace)
        steps.applied(
            operation,
            kinds.SERVICE_ACCOUNT,
            namespace,
            manifests.service_account(revision, namespace),
        )
        steps.created(
            operation,
            kinds.CLAIM,
            namespace,
            manifests.state_claim(revision, namespace, self.options),
        )
        # before any workload of the revision can start: its own policies
        policies.stage(steps, operation, revision, namespace, self.network)
        if manifests.mode_of(revision) == naming.EMBEDDED:
            service = manifests.service(revision, namespace, selects=revision.revision_id)
            steps.applied(operation, kinds.SERVICE, namespace, service)
            return base.Ready({"namespace": namespace})
        # dedicated: the Service keeps selecting the active revision (or nothing) until
        # activation; only create it when it is missing
        steps.created(
            operation,
            kinds.SERVICE,
            namespace,
            manifests.service(revision, namespace, selects=None),
        )
        return self.gateways.start_dedicated(self.hooks, operation, revision, namespace)

    def _stage_credential(
        self, operation: base.Operation, revision: base.RevisionSpec, namespace: str
    ) -> None:
        if revision.credential is not None:
            secret = manifests.credential_secret(
                revision, namespace, revision.credential, self.options.fingerprint_key_id
            )
            self.steps.applied(operation, kinds.SECRET, namespace, secret)
            return
        expected = manifests.credential_secret(revision, namespace, base.Credential("", ""))
        existing = self.steps.owned(
            kinds.SECRET,
            namespace,
            naming.credential_secret(revision.revision_id),
            expected["metadata"]["labels"],
        )
        if existing is None:
            raise base.PermanentDriverError(
                CREDENTIAL_MISSING, "the revision has no harness credential to deliver"
            )

    def activate_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Activation | base.Pending | base.Failed:
        """Serve the Agent's endpoint from ``revision``; ``Pending`` until it is ready, then with
        the startup warnings its gateway printed (``startup``)."""
        operation.check()
        namespace = self._required_namespace(revision.namespace_id)
        if manifests.mode_of(revision) == naming.EMBEDDED:
            deployment: Mapping[str, Any] | None = self.gateways.apply(
                self.hooks, operation, revision, namespace, replicas=1
            )
        else:
            deployment = self.gateways.running(revision, namespace)
            if deployment is None:
                return base.Pending("the revision's gateway does not exist (not prepared)")
            service = manifests.service(revision, namespace, selects=revision.revision_id)
            self.steps.applied(operation, kinds.SERVICE, namespace, service)
        operation.check()
        slices = self.api.find(
            kinds.ENDPOINT_SLICE,
            namespace,
            naming.selector({"kubernetes.io/service-name": naming.agent_object(revision.agent_id)}),
        )
        verdict = rollout.gateway_verdict(deployment, slices, revision.revision_id)
        observation = rollout.observation(verdict)
        if isinstance(observation, base.Ready):
            observation = startup.observed(self.api, namespace, revision)
        if isinstance(observation, base.Ready):
            policies.close(self.steps, operation, revision, namespace, self.network)
            return base.Activation(manifests.endpoint(revision, namespace), observation.warnings)
        if manifests.mode_of(revision) == naming.EMBEDDED:
            gateway.revoke_failed_launch(self.hooks, operation, revision, observation)
        return observation

    def stop_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Scale the revision's gateway to zero; keep its ConfigMap, Secret and volume."""
        placed = self._placed(operation, revision)
        if placed is None:
            return
        namespace, current = placed
        policies.close(self.steps, operation, revision, namespace, self.network)
        if current is None or (current.get("spec") or {}).get("replicas") == 0:
            return
        if self.hooks:
            self.hooks.before_workload_stop(operation, revision)
        self.gateways.apply(self.hooks, operation, revision, namespace, replicas=0, launch=False)

    def retire_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Remove the revision's own objects (and its gateway when it still runs it)."""
        placed = self._placed(operation, revision)
        if placed is None:
            return
        namespace, deployment = placed
        if deployment is not None:
            if self.hooks:
                self.hooks.before_workload_stop(operation, revision)
            self.steps.deleted(operation, kinds.DEPLOYMENT, namespace, deployment)
        revision_id = revision.revision_id
        for kind, name, role in (
            (kinds.CONFIG_MAP, naming.configuration_map(revision_id), naming.Role.CONFIGURATION),
            (kinds.SECRET, naming.credential_secret(revision_id), naming.Role.CREDENTIAL),
        ):
            expected = manifests.revision_labels(role, revision)
            current = self.steps.owned(kind, namespace, name, expected)
            if current is not None:
                self.steps.deleted(operation, kind, namespace, current)
        policies.close(self.steps, operation, revision, namespace, self.network)
        policies.retire(self.steps, operation, revision, namespace)

    def delete_agent_credentials(
        self, operation: base.Operation, namespace_id: str, agent_id: str
    ) -> None:
        """Remove every object labelled with the Agent (each under its uid)."""
        operation.check()
        namespace = self.kubernetes_namespace(namespace_id)
        if namespace is None:
            return
        self.steps.delete_all(
            operation, namespaces.AGENT_KINDS, namespace, naming.owned_by_agent(agent_id)
        )

    def observe_revisions(
        self, revisions: Sequence[base.RevisionSpec]
    ) -> Mapping[str, base.Observed]:
        """Each revision as the watch cache shows it, without a request once it is synced
        (``informer.NOT_OBSERVED`` while it is not current)."""
        if not revisions:
            return {}
        with self.informer.view() as view:
            return {
                revision.revision_id: observation.observe(
                    view, revision, fingerprint_key_id=self.options.fingerprint_key_id
                )
                for revision in revisions
            }

    def close(self) -> None:
        """Stop the watch cache and close the connections (the driver may be used again)."""
        self.informer.stop()
        self.api.close()

    # -- gateway --------------------------------------------------------------------------

    def _placed(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> tuple[str, dict[str, Any] | None] | None:
        """The revision's Kubernetes namespace and the Deployment running it (``None`` when
        none does), after checking the operation; ``None`` when the Namespace has no
        Kubernetes namespace (nothing of the revision is left to stop or remove)."""
        operation.check()
        namespace = self.kubernetes_namespace(revision.namespace_id)
        if namespace is None:
            return None
        return namespace, self.gateways.running(revision, namespace)
