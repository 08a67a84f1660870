"""How an active revision looks in the observation cache: healthy, or why not.

A revision is healthy when its Namespace has exactly one live Kubernetes namespace, every
object it needs is there, occ's and not being deleted (the gateway Deployment, the Agent's
Service, ServiceAccount and volume, the revision's ConfigMap and Secret), the gateway runs
the revision's template and the Service selects the revision's gateway pods (no drift), and
kubectl's rollout rule holds with a ready endpoint behind the Service. Its endpoint is then
the one activation publishes. Pure: it reads a ``cache.View`` and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import (
    cache,
    ensure,
    kinds,
    manifests,
    namespaces,
    naming,
    rollout,
)

OBJECT_LOST: Final = "KUBERNETES_OBJECT_LOST"
"""An object the revision needs is gone, being deleted, or not occ's."""
GATEWAY_DRIFTED: Final = "KUBERNETES_GATEWAY_DRIFTED"
"""The gateway runs another revision's template, or the Service selects other pods."""
FINGERPRINT_STALE: Final = "KUBERNETES_CREDENTIAL_FINGERPRINT_STALE"
"""The credential Secret's fingerprint is not under the installation's current key."""
GATEWAY_NOT_READY: Final = "KUBERNETES_GATEWAY_NOT_READY"
"""The gateway's rollout is not done (or scaled to zero), or no endpoint is ready."""


def needed(revision: base.RevisionSpec) -> Iterator[tuple[kinds.Kind, str, dict[str, str]]]:
    """Each object the revision runs with: its kind, name and the labels that make it occ's."""
    agent_id, revision_id = revision.agent_id, revision.revision_id
    agent_labels = {naming.NAMESPACE_ID: revision.namespace_id, naming.AGENT_ID: agent_id}
    yield (
        kinds.DEPLOYMENT,
        manifests.deployment_name(revision),
        manifests.gateway_labels(revision),
    )
    for kind, name, role in (
        (kinds.SERVICE, naming.agent_object(agent_id), naming.Role.SERVICE),
        (kinds.SERVICE_ACCOUNT, naming.agent_object(agent_id), naming.Role.SERVICE_ACCOUNT),
        (kinds.CLAIM, naming.state_claim(agent_id), naming.Role.STATE),
    ):
        yield kind, name, {**agent_labels, naming.ROLE: role}
    for kind, name, role in (
        (kinds.CONFIG_MAP, naming.configuration_map(revision_id), naming.Role.CONFIGURATION),
        (kinds.SECRET, naming.credential_secret(revision_id), naming.Role.CREDENTIAL),
    ):
        yield kind, name, manifests.revision_labels(role, revision)


def namespace_of(view: cache.View, namespace_id: str) -> str | None:
    """The one live Kubernetes namespace of an occ Namespace (as ``kubernetes_namespace``
    finds it by label), if there is exactly one."""
    live = [found for found in view.namespaces(namespace_id) if not namespaces.terminating(found)]
    if len(live) != 1:
        return None
    return str(ensure.metadata(live[0]).get("name"))


def observe(
    view: cache.View, revision: base.RevisionSpec, *, fingerprint_key_id: str | None = None
) -> base.Observed:
    """The revision's runtime as the cache shows it; with ``fingerprint_key_id``, a credential
    Secret whose fingerprint is under another key (or unkeyed) is different, so the repair
    writes it again with the current key."""
    namespace = namespace_of(view, revision.namespace_id)
    if namespace is None:
        return base.Observed(False, code=namespaces.NAMESPACE_MISSING)
    found: dict[kinds.Kind, cache.Wire] = {}
    for kind, name, labels in needed(revision):
        current = view.get(kind, namespace, name)
        if current is None or ensure.deleting(current) or not ensure.is_owned(current, labels):
            return base.Observed(False, code=OBJECT_LOST)
        found[kind] = current
    if fingerprint_key_id is not None and kinds.SECRET in found:
        annotations = ensure.metadata(found[kinds.SECRET]).get("annotations") or {}
        if annotations.get(naming.FINGERPRINT_KEY_ANNOTATION) != fingerprint_key_id:
            return base.Observed(False, code=FINGERPRINT_STALE)
    gateway, service = found[kinds.DEPLOYMENT], found[kinds.SERVICE]
    selects = (service.get("spec") or {}).get("selector") or {}
    expected = naming.gateway_selector(
        revision.agent_id, manifests.mode_of(revision), revision.revision_id
    )
    if rollout.template_revision(gateway) != revision.revision_id or selects != expected:
        return base.Observed(False, code=GATEWAY_DRIFTED)
    service_name = naming.agent_object(revision.agent_id)
    verdict = rollout.gateway_verdict(
        gateway, view.slices(namespace, service_name), revision.revision_id
    )
    if verdict.state == rollout.State.FAILED:
        return base.Observed(False, code=rollout.DEADLINE_EXCEEDED)
    if verdict.state != rollout.State.READY:
        return base.Observed(False, code=GATEWAY_NOT_READY)
    return base.Observed(True, manifests.endpoint(revision, namespace))
