"""The observation cache's store and records: indexes that follow every change, freshness on
an injected clock, and records that keep only what observations read."""

from __future__ import annotations

from typing import Any

import pytest

from occ.drivers.compute.kubernetes import cache, kinds, naming, watched
from tests.support.clock import ManualClock

BOUND_S = 60.0


def _store(clock: ManualClock | None = None) -> cache.ObjectCache:
    return cache.ObjectCache([kind.kind for kind in watched.KINDS], clock=clock or ManualClock())


def _synced(store: cache.ObjectCache) -> cache.ObjectCache:
    for kind in watched.KINDS:
        store.replace(kind.kind, [])
    return store


def _slice(name: str, service: str, namespace: str = "occ-a") -> dict[str, Any]:
    labels = {watched.SERVICE_NAME: service, naming.MANAGED_BY: naming.MANAGER}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "endpoints": []}


def _namespace(name: str, namespace_id: str) -> dict[str, Any]:
    labels = {naming.NAMESPACE_ID: namespace_id, naming.MANAGED_BY: naming.MANAGER}
    return {"metadata": {"name": name, "labels": labels}}


def _names(records: list[dict[str, Any]]) -> list[str]:
    return sorted(record["metadata"]["name"] for record in records)


def test_a_kind_is_stale_until_listed_then_until_its_proof_of_life_is_too_old() -> None:
    clock = ManualClock()
    store = _store(clock)
    assert sorted(store.stale(BOUND_S)) == sorted(kind.kind.plural for kind in watched.KINDS)
    store.alive(kinds.DEPLOYMENT)  # a watch event before any list proves nothing
    assert "deployments" in store.stale(BOUND_S)
    _synced(store)
    assert store.synced and store.stale(BOUND_S) == []

    clock.advance(BOUND_S - 1)
    store.alive(kinds.DEPLOYMENT)
    clock.advance(2)
    assert "deployments" not in store.stale(BOUND_S)
    assert "services" in store.stale(BOUND_S)
    assert store.wait_fresh(BOUND_S, timeout_s=0) == store.stale(BOUND_S)


def test_endpoint_slices_are_indexed_by_their_service_through_every_change() -> None:
    store = _synced(_store())
    kind = kinds.ENDPOINT_SLICE
    store.put(kind, _slice("web-1", "web"))
    store.put(kind, _slice("web-2", "web"))
    store.put(kind, _slice("api-1", "api"))
    store.put(kind, _slice("web-1", "web", namespace="occ-b"))
    with store.view() as view:
        assert _names(view.slices("occ-a", "web")) == ["web-1", "web-2"]
        assert _names(view.slices("occ-b", "web")) == ["web-1"]
    store.put(kind, _slice("web-2", "api"))  # relabelled: it moves
    store.drop(kind, _slice("web-1", "web"))
    with store.view() as view:
        assert view.slices("occ-a", "web") == []
        assert _names(view.slices("occ-a", "api")) == ["api-1", "web-2"]
    store.replace(kind, [_slice("db-1", "db")])
    with store.view() as view:
        assert view.slices("occ-a", "api") == [] and view.slices("occ-b", "web") == []
        assert _names(view.slices("occ-a", "db")) == ["db-1"]
        assert view.get(kind, "occ-a", "db-1") is not None
        assert view.get(kind, "occ-a", "api-1") is None


def test_namespaces_are_indexed_by_the_occ_namespace_they_belong_to() -> None:
    store = _synced(_store())
    store.put(kinds.NAMESPACE, _namespace("occ-1", "ns_a"))
    store.put(kinds.NAMESPACE, _namespace("tenant", "ns_b"))
    store.put(kinds.NAMESPACE, _namespace("tenant", "ns_a"))  # adopted by another Namespace
    with store.view() as view:
        assert _names(view.namespaces("ns_a")) == ["occ-1", "tenant"]
        assert view.namespaces("ns_b") == []
    store.drop(kinds.NAMESPACE, _namespace("occ-1", "ns_a"))
    with store.view() as view:
        assert _names(view.namespaces("ns_a")) == ["tenant"]
    assert store.counts()["namespaces"] == 1


def test_a_secret_record_keeps_its_identity_and_never_its_data() -> None:
    secret = {
        "kind": "Secret",
        "metadata": {
            "name": "rev-1-credential",
            "namespace": "occ-a",
            "uid": "u-1",
            "labels": {naming.MANAGED_BY: naming.MANAGER, "team": "a"},
            "annotations": {naming.FINGERPRINT_ANNOTATION: "f"},
            "managedFields": [{"manager": "occ"}],
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "data": {"credential": "c2VjcmV0"},
    }
    assert watched.metadata_record(secret) == {
        "metadata": {
            "name": "rev-1-credential",
            "namespace": "occ-a",
            "labels": {naming.MANAGED_BY: naming.MANAGER},
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        }
    }


def test_a_deployment_record_keeps_what_the_rollout_rule_reads() -> None:
    deployment = {
        "metadata": {"name": "agt-1", "namespace": "occ-a", "generation": 3, "labels": {}},
        "spec": {
            "replicas": 1,
            "template": {
                "metadata": {"annotations": {naming.REVISION_ANNOTATION: "rev_1", "x": "y"}},
                "spec": {"containers": [{"name": "gateway", "image": "img"}]},
            },
        },
        "status": {
            "observedGeneration": 3,
            "replicas": 1,
            "updatedReplicas": 1,
            "availableReplicas": 1,
            "readyReplicas": 1,
            "conditions": [{"type": "Progressing", "reason": "NewReplicaSetAvailable", "x": 1}],
        },
    }
    record = watched.deployment_record(deployment)
    assert record["metadata"]["generation"] == 3
    assert record["spec"] == {
        "replicas": 1,
        "template": {"metadata": {"annotations": {naming.REVISION_ANNOTATION: "rev_1"}}},
    }
    assert record["status"] == {
        "observedGeneration": 3,
        "replicas": 1,
        "updatedReplicas": 1,
        "availableReplicas": 1,
        "conditions": [{"type": "Progressing", "reason": "NewReplicaSetAvailable"}],
    }


@pytest.mark.parametrize("kind", watched.KINDS, ids=lambda kind: kind.kind.plural)
def test_the_cache_reads_only_metadata_of_kinds_whose_contents_it_never_needs(
    kind: watched.Watched,
) -> None:
    needs_contents = {kinds.DEPLOYMENT, kinds.SERVICE, kinds.ENDPOINT_SLICE}
    assert kind.metadata_only is (kind.kind not in needs_contents)


def test_per_namespace_streams_list_and_age_apart() -> None:
    """A tenant-scoped cache: a list in one namespace replaces only that namespace's records,
    and each namespace's stream is fresh or stale on its own."""
    clock = ManualClock()
    streams = [cache.stream(kinds.ENDPOINT_SLICE, name) for name in ("team-a", "team-b")]
    store = cache.ObjectCache([kinds.ENDPOINT_SLICE], clock=clock, streams=streams)
    assert store.stale(BOUND_S) == ["endpointslices in team-a", "endpointslices in team-b"]
    store.replace(kinds.ENDPOINT_SLICE, [_slice("a1", "svc", "team-a")], "team-a")
    store.replace(kinds.ENDPOINT_SLICE, [_slice("b1", "svc", "team-b")], "team-b")
    assert store.synced and store.stale(BOUND_S) == []

    store.replace(kinds.ENDPOINT_SLICE, [_slice("a2", "svc", "team-a")], "team-a")
    with store.view() as view:
        assert _names(view.slices("team-a", "svc")) == ["a2"]
        assert _names(view.slices("team-b", "svc")) == ["b1"]

    clock.advance(BOUND_S - 1)
    store.alive(kinds.ENDPOINT_SLICE, "team-a")
    clock.advance(2)
    assert store.stale(BOUND_S) == ["endpointslices in team-b"]
