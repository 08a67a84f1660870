"""Namespace infrastructure of the ``kubernetes`` driver: create or adopt, and tear down.

In a ``cluster`` installation, a created namespace is named from the occ Namespace id,
labelled with restricted Pod Security, fenced by a default-deny NetworkPolicy and an
``allow-dns`` egress policy, and gets the configured ResourceQuota and LimitRange. An adopted
namespace (``existing_namespace``) only gets occ's labels and annotation (a merge patch) and
occ's policies; on teardown it is never deleted: only the objects occ owns in it go, then
occ's keys. Deletion is asynchronous: ``Pending`` until the namespace is gone (or empty of
occ's objects).

In a ``tenant-scoped`` installation occ creates and deletes no namespace: every namespace is
one of the managed namespaces an administrator provisioned with occ's Role, handled as an
adopted one. One that is not managed, or whose Role is missing, stays ``Pending`` with a code
(``KUBERNETES_NAMESPACE_NOT_MANAGED``, ``KUBERNETES_PERMISSION_MISSING``) until it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import (
    access,
    client,
    ensure,
    kinds,
    namespace_manifests,
    naming,
)

NAMESPACE_MISSING: Final = "KUBERNETES_NAMESPACE_MISSING"
NOT_MANAGED: Final = "KUBERNETES_NAMESPACE_NOT_MANAGED"

AGENT_KINDS: Final = (
    kinds.DEPLOYMENT,
    kinds.SERVICE,
    kinds.CONFIG_MAP,
    kinds.SECRET,
    kinds.SERVICE_ACCOUNT,
    kinds.CLAIM,
    kinds.NETWORK_POLICY,
)
"""The kinds occ creates for an Agent and its revisions, in teardown order (workloads first,
their NetworkPolicies last)."""

OWNED_KINDS: Final = (*AGENT_KINDS, kinds.QUOTA, kinds.LIMITS)
"""Every kind occ creates inside a namespace, in teardown order (an Agent's first)."""

TENANT_KINDS: Final = AGENT_KINDS
"""Every kind occ creates in a managed namespace of a tenant-scoped installation (its
NetworkPolicies included)."""


@dataclass(frozen=True)
class Policy:
    """What the namespaces occ creates get besides the fixed policies."""

    prefix: str
    resource_quota: Mapping[str, str] | None = None
    limit_range: Mapping[str, Mapping[str, str]] | None = None
    installation: str = access.CLUSTER
    managed: tuple[str, ...] = ()
    """The managed namespaces of a tenant-scoped installation."""

    @property
    def tenant_scoped(self) -> bool:
        return self.installation == access.TENANT_SCOPED


def name_of(policy: Policy, namespace: base.NamespaceSpec) -> str:
    return namespace.existing_namespace or naming.kubernetes_namespace(policy.prefix, namespace.id)


def find(api: client.KubernetesApi, policy: Policy, namespace_id: str) -> str | None:
    """The one live Kubernetes namespace labelled with ``namespace_id``: found by label
    (``cluster``), or among the managed namespaces, each read by name (``tenant-scoped``: occ
    may not list namespaces)."""
    if policy.tenant_scoped:
        for name in policy.managed:
            found = api.read(kinds.NAMESPACE, None, name)
            if found is None or terminating(found):
                continue
            if ensure.is_owned(found, {naming.NAMESPACE_ID: namespace_id}):
                return name
        return None
    live = [
        obj
        for obj in api.find(kinds.NAMESPACE, None, naming.owned_by_namespace(namespace_id))
        if not terminating(obj)
    ]
    return str(ensure.metadata(live[0]).get("name")) if len(live) == 1 else None


def terminating(obj: Mapping[str, Any]) -> bool:
    status = obj.get("status") or {}
    return ensure.deleting(obj) or status.get("phase") == "Terminating"


def ensure_infrastructure(
    steps: ensure.Steps, policy: Policy, operation: base.Operation, namespace: base.NamespaceSpec
) -> str | base.Pending:
    """Create or adopt the namespace and its policies; its name, or ``Pending``."""
    api = steps.api
    name = name_of(policy, namespace)
    adopted = namespace.existing_namespace is not None or policy.tenant_scoped
    operation.check()
    if policy.tenant_scoped:
        waiting = _unprovisioned(api, policy, name)
        if waiting is not None:
            return waiting
    current = api.read(kinds.NAMESPACE, None, name)
    if current is None:
        if adopted:
            raise base.PermanentDriverError(
                NAMESPACE_MISSING, f"the existing namespace {name} does not exist"
            )
        operation.check()
        current = api.create(
            kinds.NAMESPACE, None, namespace_manifests.namespace(name, namespace.id)
        )
        if current is None:
            current = api.read(kinds.NAMESPACE, None, name)
            if current is None:
                return base.Pending("the namespace appeared and vanished meanwhile")
    if terminating(current):
        return base.Pending("the namespace is terminating")
    labels = ensure.labels_of(current)
    if adopted:
        claimed = labels.get(naming.NAMESPACE_ID)
        if labels.get(naming.MANAGED_BY) == naming.MANAGER and claimed not in (None, namespace.id):
            raise base.PermanentDriverError(
                ensure.NOT_OWNED, f"namespace {name} is already adopted by another Namespace"
            )
        patch = namespace_manifests.adoption_patch(namespace.id)
        if not ensure.contains(current, patch):
            operation.check()
            api.merge_patch(kinds.NAMESPACE, None, name, patch)
    else:
        desired = namespace_manifests.namespace(name, namespace.id)
        ensure.require_owned(kinds.NAMESPACE, current, desired["metadata"]["labels"])
        if not ensure.contains(current, desired):  # a label removed behind occ's back
            operation.check()
            api.merge_patch(kinds.NAMESPACE, None, name, {"metadata": desired["metadata"]})
    _ensure_policies(steps, policy, operation, namespace, name, adopted=adopted)
    return name


def _unprovisioned(api: client.KubernetesApi, policy: Policy, name: str) -> base.Pending | None:
    """Why occ may not work in ``name`` yet (tenant-scoped), or ``None`` when it may."""
    if name not in policy.managed:
        return base.Pending(
            f"namespace {name} is not one of the managed namespaces "
            "(OCC_KUBERNETES_MANAGED_NAMESPACES)",
            code=NOT_MANAGED,
        )
    missing = access.missing_in(api, name)
    if missing:
        return base.Pending(
            f"occ may not {', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''} in "
            f"namespace {name}: an administrator applies `occ kubernetes rbac --namespace {name}`",
            code=access.PERMISSION_MISSING,
        )
    return None


def _ensure_policies(
    steps: ensure.Steps,
    policy: Policy,
    operation: base.Operation,
    namespace: base.NamespaceSpec,
    name: str,
    *,
    adopted: bool,
) -> None:
    deny = namespace_manifests.default_deny(name, namespace.id, adopted=adopted)
    steps.applied(operation, kinds.NETWORK_POLICY, name, deny)
    steps.applied(
        operation, kinds.NETWORK_POLICY, name, namespace_manifests.allow_dns(name, namespace.id)
    )
    if adopted:
        return  # the tenant's own quota and limits stay theirs
    if policy.resource_quota:
        quota = namespace_manifests.resource_quota(name, namespace.id, policy.resource_quota)
        steps.applied(operation, kinds.QUOTA, name, quota)
    if policy.limit_range:
        limits = namespace_manifests.limit_range(name, namespace.id, policy.limit_range)
        steps.applied(operation, kinds.LIMITS, name, limits)


def delete_infrastructure(
    steps: ensure.Steps,
    policy: Policy,
    operation: base.Operation,
    namespace: base.NamespaceSpec,
    before_delete: Any,
) -> base.Observation:
    """Delete the namespace (or occ's objects in an adopted one); ``Ready`` once gone.

    ``before_delete()`` runs the teardown hooks just before anything is removed.
    """
    api = steps.api
    name = name_of(policy, namespace)
    operation.check()
    current = api.read(kinds.NAMESPACE, None, name)
    if current is None:
        return base.Ready()
    labels = ensure.labels_of(current)
    ours = labels.get(naming.MANAGED_BY) == naming.MANAGER and (
        labels.get(naming.NAMESPACE_ID) == namespace.id
    )
    if not ours:
        return base.Ready()  # never occ's (or already released): nothing of occ's is there
    if namespace.existing_namespace is None and not policy.tenant_scoped:
        if terminating(current):
            return base.Pending("the namespace is terminating")
        before_delete()
        operation.check()
        uid = str(ensure.metadata(current).get("uid"))
        api.delete(kinds.NAMESPACE, None, name, uid)
        return base.Pending("the namespace is terminating")
    before_delete()
    owned = TENANT_KINDS if policy.tenant_scoped else OWNED_KINDS
    remaining = steps.delete_all(operation, owned, name, naming.owned_by_namespace(namespace.id))
    if remaining:
        return base.Pending("occ's objects in the adopted namespace are being deleted")
    operation.check()
    api.merge_patch(kinds.NAMESPACE, None, name, namespace_manifests.release_patch())
    return base.Ready()
