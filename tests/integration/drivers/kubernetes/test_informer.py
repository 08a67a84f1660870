"""The observation cache over real HTTP: lists, then watches, against the fake API server.

A synced cache answers bulk observations without a request; changes behind the driver's back
arrive through the watches; an expired version is answered by listing again, a broken stream
by watching again from where it stopped; a cache that lost the cluster for longer than its
bound refuses to observe instead of answering from old data.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import (
    KubernetesComputeDriver,
    informer,
    namespaces,
    naming,
    observation,
    watching,
)
from tests.integration.drivers.kubernetes import helpers
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

Specs = helpers.Specs
QUICK = watching.Timing(session_s=(30, 30), backoff_s=(0.1, 0.2))
"""Reconnections within a fraction of a second, so a test waits on them briefly."""


@pytest.fixture
def synced(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: Specs,
) -> Iterator[tuple[str, base.RevisionSpec]]:
    """A deployed revision, observed healthy, every kind watched, an empty journal."""
    driver.informer = informer.Informer(driver.api, timing=QUICK)
    deployed = helpers.deployed(driver, kube_api, operation, specs)
    helpers.observed_healthy(driver, deployed[1])
    helpers.wait_watching(kube_api)
    kube_api.clear_journal()
    yield deployed
    driver.informer.stop()


def _lists(kube_api: FakeKubeAPI) -> list[str]:
    """The plural of every list request (not a watch) in the journal."""
    return [
        request.path.rstrip("/").rsplit("/", 1)[-1]
        for request in kube_api.journal
        if request.method == "GET" and request.query.get("watch", [""])[-1] != "true"
    ]


def test_a_synced_cache_observes_a_batch_without_a_request(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: Specs,
    synced: tuple[str, base.RevisionSpec],
) -> None:
    namespace, revision = synced
    others = [specs.revision(agent_id=f"agt_{i:08}-0000-4000-8000-000000000000") for i in range(3)]
    for other in others:
        helpers.deploy(driver, kube_api, operation, other)
    wait_for(
        lambda: all(seen.healthy for seen in driver.observe_revisions(others).values()),
        timeout=helpers.OBSERVED_TIMEOUT,
        message="the other revisions to be observed healthy",
    )
    kube_api.clear_journal()
    for _ in range(3):
        observed = driver.observe_revisions([revision, *others])
        assert all(seen.healthy for seen in observed.values())
        assert observed[revision.revision_id].endpoint == (
            f"http://{naming.agent_object(revision.agent_id)}.{namespace}.svc.cluster.local:8080"
        )
    assert kube_api.journal == []


def test_changes_behind_the_drivers_back_are_seen_without_a_list(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    synced: tuple[str, base.RevisionSpec],
) -> None:
    namespace, revision = synced
    gateway = helpers.gateway_name(revision)

    def other_template(deployment: dict[str, Any]) -> None:
        template = deployment["spec"]["template"]
        template["metadata"]["annotations"][naming.REVISION_ANNOTATION] = "rev_someone-else"

    kube_api.edit("deployments", namespace, gateway, other_template)
    helpers.observed_with(driver, revision, observation.GATEWAY_DRIFTED)
    kube_api.remove("deployments", namespace, gateway)
    helpers.observed_with(driver, revision, observation.OBJECT_LOST)
    assert kube_api.journal == []  # neither a list nor a read: the open watches told


@pytest.mark.parametrize(
    "plural", ["configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims", "services"]
)
def test_a_lost_object_of_any_kind_is_seen(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    synced: tuple[str, base.RevisionSpec],
    plural: str,
) -> None:
    namespace, revision = synced
    (lost,) = [
        obj
        for obj in kube_api.objects(plural, namespace)
        if obj["metadata"]["labels"].get(naming.AGENT_ID) == revision.agent_id
    ]
    kube_api.remove(plural, namespace, lost["metadata"]["name"])
    helpers.observed_with(driver, revision, observation.OBJECT_LOST)


def test_a_stopped_gateway_is_seen_not_ready(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    synced: tuple[str, base.RevisionSpec],
) -> None:
    namespace, revision = synced
    driver.stop_revision(operation, revision)
    kube_api.mark_rollout(namespace, helpers.gateway_name(revision))
    helpers.observed_with(driver, revision, observation.GATEWAY_NOT_READY)


def test_an_expired_version_is_answered_by_listing_again(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    synced: tuple[str, base.RevisionSpec],
) -> None:
    namespace, revision = synced
    # a write no watch selects moves the newest version past every watch's own
    kube_api.create_foreign("configmaps", namespace, {"metadata": {"name": "not-occs"}})
    kube_api.compact()
    assert kube_api.cut_watches() == len(helpers.WATCHED_PLURALS)
    wait_for(
        lambda: set(_lists(kube_api)) >= helpers.WATCHED_PLURALS,
        timeout=helpers.OBSERVED_TIMEOUT,
        message="every kind to be listed again",
    )
    assert all(
        request.status == 200
        for request in kube_api.journal
        if request.query.get("watch", [""])[-1] != "true"
    )
    helpers.observed_healthy(driver, revision)
    kube_api.remove("configmaps", namespace, naming.configuration_map(revision.revision_id))
    helpers.observed_with(driver, revision, observation.OBJECT_LOST)


def test_a_broken_stream_is_watched_again_from_where_it_stopped(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    synced: tuple[str, base.RevisionSpec],
) -> None:
    namespace, revision = synced
    assert kube_api.cut_watches() == len(helpers.WATCHED_PLURALS)
    kube_api.remove("secrets", namespace, naming.credential_secret(revision.revision_id))
    helpers.observed_with(driver, revision, observation.OBJECT_LOST)
    helpers.wait_watching(kube_api)
    assert _lists(kube_api) == []  # no list: every change since was replayed


def test_a_cache_out_of_touch_beyond_its_bound_refuses_then_recovers(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    synced: tuple[str, base.RevisionSpec],
) -> None:
    _, revision = synced
    driver.close()
    short = watching.Timing(session_s=(2, 2), backoff_s=(0.1, 0.2))
    driver.informer = informer.Informer(driver.api, stale_after_s=3.0, timing=short)
    helpers.observed_healthy(driver, revision)
    kube_api.stop()
    try:

        def refused() -> bool:
            try:
                helpers.observed(driver, revision)
            except base.TransientDriverError as exc:
                return exc.code == informer.NOT_OBSERVED
            return False

        wait_for(refused, timeout=10.0, message="observations to be refused")
    finally:
        kube_api.start()
    helpers.observed_healthy(driver, revision)


def test_idle_kinds_stay_fresh_across_sessions_and_a_tighter_bound_is_refused(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    synced: tuple[str, base.RevisionSpec],
) -> None:
    _, revision = synced
    driver.close()
    short = watching.Timing(session_s=(1, 1), backoff_s=(0.1, 0.2))
    driver.informer = informer.Informer(driver.api, stale_after_s=2.0, timing=short)
    helpers.observed_healthy(driver, revision)
    kube_api.clear_journal()
    # nothing changes, sessions end and start again: every kind keeps proving it is current
    wait_for(
        lambda: len(helpers.watch_requests(kube_api)) >= 3 * len(helpers.WATCHED_PLURALS),
        timeout=helpers.OBSERVED_TIMEOUT,
        message="three sessions of every watch",
    )
    assert helpers.observed(driver, revision).healthy
    with pytest.raises(ValueError, match="session"):
        informer.Informer(driver.api, stale_after_s=1.0, timing=short)


def test_the_first_observation_waits_for_the_first_lists_and_refuses_without_them(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    synced: tuple[str, base.RevisionSpec],
) -> None:
    _, revision = synced
    driver.close()
    driver.informer = informer.Informer(driver.api, sync_wait_s=0.5, timing=QUICK)
    kube_api.deny("list", "secrets")
    with pytest.raises(base.TransientDriverError) as refused:
        helpers.observed(driver, revision)
    assert refused.value.code == informer.NOT_OBSERVED and "secrets" in refused.value.reason
    kube_api.reset()  # access back, and an empty cluster: nothing of the revision is left
    helpers.observed_with(driver, revision, namespaces.NAMESPACE_MISSING)


def test_closing_the_driver_stops_every_watch_thread(
    driver: KubernetesComputeDriver, synced: tuple[str, base.RevisionSpec]
) -> None:
    def watch_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("occ-kubernetes-watch-")]

    assert driver.informer.running and len(watch_threads()) == len(helpers.WATCHED_PLURALS)
    driver.close()
    assert not driver.informer.running and watch_threads() == []
    helpers.observed_healthy(driver, synced[1])  # observing again starts it again
    assert len(watch_threads()) == len(helpers.WATCHED_PLURALS)
