"""How an active revision is judged from the observation cache, as a table over cached worlds.

Every world is built from the driver's own manifests (what occ wrote), trimmed the way the
watches trim them, then changed the way a cluster or a person could change it.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import (
    cache,
    kinds,
    manifests,
    namespaces,
    naming,
    observation,
    rollout,
    watched,
)

NAMESPACE = "occ-0123456789abcde"
OPTIONS = manifests.GatewayOptions(image="registry.example/gateway:1")
DONE = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
World = dict[kinds.Kind, list[dict[str, Any]]]


def _revision(mode: str = "embedded") -> base.RevisionSpec:
    return base.RevisionSpec(
        namespace_id=f"ns_{uuid.uuid4()}",
        agent_id=f"agt_{uuid.uuid4()}",
        revision_id=f"rev_{uuid.uuid4()}",
        revision_number=1,
        configuration_generation=1,
        configuration_document={"model": "stand-in"},
        harness_id="openclaw" if mode == "embedded" else "codex",
        harness_version="1.0.0",
        harness_mode=mode,
        service_principal_id=f"prn_{uuid.uuid4()}",
    )


def _world(revision: base.RevisionSpec) -> World:
    """Everything of a healthy, active revision, as the cluster holds it."""
    deployment = manifests.gateway_deployment(revision, NAMESPACE, OPTIONS)
    deployment["metadata"]["generation"] = 1
    deployment["status"] = dict(DONE)
    service = manifests.service(revision, NAMESPACE, selects=revision.revision_id)
    service_name = service["metadata"]["name"]
    endpoint_slice = {
        "metadata": {
            "name": f"{service_name}-x7k2p",
            "namespace": NAMESPACE,
            "labels": {**service["metadata"]["labels"], watched.SERVICE_NAME: service_name},
        },
        "endpoints": [{"addresses": ["10.244.0.7"], "conditions": {"ready": True}}],
    }
    labels = naming.labels(naming.Role.NAMESPACE, namespace_id=revision.namespace_id)
    return {
        kinds.NAMESPACE: [{"metadata": {"name": NAMESPACE, "labels": labels}}],
        kinds.DEPLOYMENT: [deployment],
        kinds.SERVICE: [service],
        kinds.ENDPOINT_SLICE: [endpoint_slice],
        kinds.CONFIG_MAP: [manifests.configuration_map(revision, NAMESPACE)],
        kinds.SECRET: [
            manifests.credential_secret(
                revision, NAMESPACE, base.Credential("s", "test-fingerprint-key")
            )
        ],
        kinds.SERVICE_ACCOUNT: [manifests.service_account(revision, NAMESPACE)],
        kinds.CLAIM: [manifests.state_claim(revision, NAMESPACE, OPTIONS)],
    }


def _observe(world: World, revision: base.RevisionSpec) -> base.Observed:
    store = cache.ObjectCache([kind.kind for kind in watched.KINDS])
    for kind in watched.KINDS:
        store.replace(kind.kind, [kind.keep(obj) for obj in world[kind.kind]])
    with store.view() as view:
        return observation.observe(view, revision)


def test_a_secret_whose_fingerprint_is_under_another_key_is_repaired() -> None:
    """An unkeyed (older) annotation, or one under a rotated key, makes the runtime different:
    the repair pass writes the Secret again under the current key."""
    revision = _revision("embedded")
    world = _world(revision)
    assert _observe(world, revision).healthy  # not checked without a key id
    with_key = _with_key_id(world, revision, "key-now")
    assert _observe_keyed(with_key, revision, "key-now").healthy
    stale = _observe_keyed(with_key, revision, "key-rotated")
    assert not stale.healthy and stale.code == observation.FINGERPRINT_STALE
    unkeyed = _observe_keyed(world, revision, "key-now")
    assert not unkeyed.healthy and unkeyed.code == observation.FINGERPRINT_STALE


def _with_key_id(world: World, revision: base.RevisionSpec, key_id: str) -> World:
    secret = manifests.credential_secret(
        revision, NAMESPACE, base.Credential("s", "test-fingerprint-key"), key_id
    )
    return {**world, kinds.SECRET: [secret]}


def _observe_keyed(world: World, revision: base.RevisionSpec, key_id: str) -> base.Observed:
    store = cache.ObjectCache([kind.kind for kind in watched.KINDS])
    for kind in watched.KINDS:
        store.replace(kind.kind, [kind.keep(obj) for obj in world[kind.kind]])
    with store.view() as view:
        return observation.observe(view, revision, fingerprint_key_id=key_id)


def _changed(world: World, kind: kinds.Kind, change: Callable[[dict[str, Any]], None]) -> World:
    changed = copy.deepcopy(world)
    change(changed[kind][0])
    return changed


def _gone(world: World, kind: kinds.Kind) -> World:
    return {**world, kind: []}


@pytest.mark.parametrize("mode", ["embedded", "dedicated"])
def test_a_healthy_revision_is_observed_at_its_activation_endpoint(mode: str) -> None:
    revision = _revision(mode)
    assert _observe(_world(revision), revision) == base.Observed(
        True, manifests.endpoint(revision, NAMESPACE)
    )


@pytest.mark.parametrize(
    "kind",
    [
        kinds.DEPLOYMENT,
        kinds.SERVICE,
        kinds.CONFIG_MAP,
        kinds.SECRET,
        kinds.SERVICE_ACCOUNT,
        kinds.CLAIM,
    ],
    ids=lambda kind: kind.plural,
)
def test_a_lost_deleting_or_foreign_object_is_an_object_lost(kind: kinds.Kind) -> None:
    revision = _revision()
    world = _world(revision)
    assert _observe(_gone(world, kind), revision).code == observation.OBJECT_LOST

    def deleting(obj: dict[str, Any]) -> None:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    def foreign(obj: dict[str, Any]) -> None:
        obj["metadata"]["labels"][naming.AGENT_ID] = f"agt_{uuid.uuid4()}"

    for change in (deleting, foreign):
        observed = _observe(_changed(world, kind, change), revision)
        assert (observed.healthy, observed.code) == (False, observation.OBJECT_LOST)


def test_another_revisions_objects_do_not_stand_in_for_the_revisions_own() -> None:
    revision, other = _revision(), _revision()
    world = _world(revision)
    world[kinds.CONFIG_MAP] = _world(other)[kinds.CONFIG_MAP]
    assert _observe(world, revision).code == observation.OBJECT_LOST


def test_a_namespace_missing_terminating_or_ambiguous_is_namespace_missing() -> None:
    revision = _revision()
    world = _world(revision)
    assert _observe(_gone(world, kinds.NAMESPACE), revision).code == (namespaces.NAMESPACE_MISSING)

    def terminating(obj: dict[str, Any]) -> None:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    changed = _changed(world, kinds.NAMESPACE, terminating)
    assert _observe(changed, revision).code == namespaces.NAMESPACE_MISSING
    twin = copy.deepcopy(world[kinds.NAMESPACE][0])
    twin["metadata"]["name"] = "tenant-twin"
    ambiguous = {**world, kinds.NAMESPACE: [*world[kinds.NAMESPACE], twin]}
    assert _observe(ambiguous, revision).code == namespaces.NAMESPACE_MISSING


def test_a_template_of_another_revision_is_drift() -> None:
    revision = _revision()

    def other_template(obj: dict[str, Any]) -> None:
        annotations = obj["spec"]["template"]["metadata"]["annotations"]
        annotations[naming.REVISION_ANNOTATION] = f"rev_{uuid.uuid4()}"

    world = _changed(_world(revision), kinds.DEPLOYMENT, other_template)
    assert _observe(world, revision).code == observation.GATEWAY_DRIFTED


@pytest.mark.parametrize("mode", ["embedded", "dedicated"])
def test_a_service_that_selects_other_pods_is_drift(mode: str) -> None:
    revision = _revision(mode)

    def other_pods(obj: dict[str, Any]) -> None:
        obj["spec"]["selector"][naming.ROLE] = "something-else"

    world = _changed(_world(revision), kinds.SERVICE, other_pods)
    assert _observe(world, revision).code == observation.GATEWAY_DRIFTED


@pytest.mark.parametrize(
    ("kind", "change", "code"),
    [
        (
            kinds.ENDPOINT_SLICE,
            lambda obj: obj["endpoints"][0]["conditions"].update(ready=False),
            observation.GATEWAY_NOT_READY,
        ),
        (
            kinds.DEPLOYMENT,
            lambda obj: obj["status"].update(availableReplicas=0),
            observation.GATEWAY_NOT_READY,
        ),
        (
            kinds.DEPLOYMENT,
            lambda obj: obj["spec"].update(replicas=0),  # stopped
            observation.GATEWAY_NOT_READY,
        ),
        (
            kinds.DEPLOYMENT,
            lambda obj: obj["status"].update(
                conditions=[{"type": "Progressing", "reason": rollout.PROGRESS_DEADLINE_EXCEEDED}]
            ),
            rollout.DEADLINE_EXCEEDED,
        ),
    ],
    ids=["no-ready-endpoint", "unavailable", "scaled-to-zero", "deadline"],
)
def test_a_rollout_not_done_is_not_ready(
    kind: kinds.Kind, change: Callable[[dict[str, Any]], None], code: str
) -> None:
    revision = _revision()
    world = _changed(_world(revision), kind, change)
    assert _observe(world, revision) == base.Observed(False, code=code)


def test_the_endpoints_of_another_service_do_not_count() -> None:
    revision = _revision()

    def elsewhere(obj: dict[str, Any]) -> None:
        obj["metadata"]["labels"][watched.SERVICE_NAME] = "agt-someone-else"

    world = _changed(_world(revision), kinds.ENDPOINT_SLICE, elsewhere)
    assert _observe(world, revision).code == observation.GATEWAY_NOT_READY
