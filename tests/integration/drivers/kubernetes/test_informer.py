"""The observation cache over real HTTP: lists, then watches, against the fake API server.

A synced cache answers bulk observations without a request; changes behind the driver's back
arrive through the watches; an expired version is answered by listing again, a broken stream
by watching again from where it stopped; a cache that lost the cluster for longer than its
bound refuses to observe instead of answering from old data.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Synced:
    """A driver whose cache is synced, the fake cluster it watches and the revision deployed."""

    driver: KubernetesComputeDriver
    kube_api: FakeKubeAPI
    operation: base.Operation
    namespace: str
    revision: base.RevisionSpec

    def reinform(self, **options: Any) -> None:
        """Close the driver and give it a new cache with these options (``Informer``'s)."""
        self.driver.close()
        self.driver.informer = informer.Informer(self.driver.api, **options)


@pytest.fixture
def synced(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: Specs,
) -> Iterator[Synced]:
    """A deployed revision, observed healthy, every kind watched, an empty journal."""
    driver.informer = informer.Informer(driver.api, timing=QUICK)
    namespace, revision = helpers.deployed(driver, kube_api, operation, specs)
    helpers.observed_healthy(driver, revision)
    helpers.wait_watching(kube_api)
    kube_api.clear_journal()
    yield Synced(driver, kube_api, operation, namespace, revision)
    driver.informer.stop()


def _lists(kube_api: FakeKubeAPI) -> list[str]:
    """The plural of every list request (not a watch) in the journal."""
    return [
        request.path.rstrip("/").rsplit("/", 1)[-1]
        for request in kube_api.journal
        if request.method == "GET" and request.query.get("watch", [""])[-1] != "true"
    ]


def test_a_synced_cache_observes_a_batch_without_a_request(synced: Synced, specs: Specs) -> None:
    others = [specs.revision(agent_id=f"agt_{i:08}-0000-4000-8000-000000000000") for i in range(3)]
    for other in others:
        helpers.deploy(synced.driver, synced.kube_api, synced.operation, other)
    wait_for(
        lambda: all(seen.healthy for seen in synced.driver.observe_revisions(others).values()),
        timeout=helpers.OBSERVED_TIMEOUT,
        message="the other revisions to be observed healthy",
    )
    synced.kube_api.clear_journal()
    for _ in range(3):
        observed = synced.driver.observe_revisions([synced.revision, *others])
        assert all(seen.healthy for seen in observed.values())
        service = f"{naming.agent_object(synced.revision.agent_id)}.{synced.namespace}"
        assert observed[synced.revision.revision_id].endpoint == (
            f"http://{service}.svc.cluster.local:8080"
        )
    assert synced.kube_api.journal == []


def test_changes_behind_the_drivers_back_are_seen_without_a_list(synced: Synced) -> None:
    gateway = helpers.gateway_name(synced.revision)

    def other_template(deployment: dict[str, Any]) -> None:
        template = deployment["spec"]["template"]
        template["metadata"]["annotations"][naming.REVISION_ANNOTATION] = "rev_someone-else"

    synced.kube_api.edit("deployments", synced.namespace, gateway, other_template)
    helpers.observed_with(synced.driver, synced.revision, observation.GATEWAY_DRIFTED)
    synced.kube_api.remove("deployments", synced.namespace, gateway)
    helpers.observed_with(synced.driver, synced.revision, observation.OBJECT_LOST)
    assert synced.kube_api.journal == []  # neither a list nor a read: the open watches told


@pytest.mark.parametrize(
    "plural", ["configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims", "services"]
)
def test_a_lost_object_of_any_kind_is_seen(synced: Synced, plural: str) -> None:
    (lost,) = [
        obj
        for obj in synced.kube_api.objects(plural, synced.namespace)
        if obj["metadata"]["labels"].get(naming.AGENT_ID) == synced.revision.agent_id
    ]
    synced.kube_api.remove(plural, synced.namespace, lost["metadata"]["name"])
    helpers.observed_with(synced.driver, synced.revision, observation.OBJECT_LOST)


def test_a_stopped_gateway_is_seen_not_ready(synced: Synced) -> None:
    synced.driver.stop_revision(synced.operation, synced.revision)
    synced.kube_api.mark_rollout(synced.namespace, helpers.gateway_name(synced.revision))
    helpers.observed_with(synced.driver, synced.revision, observation.GATEWAY_NOT_READY)


def test_an_expired_version_is_answered_by_listing_again(synced: Synced) -> None:
    # a write no watch selects moves the newest version past every watch's own
    synced.kube_api.create_foreign(
        "configmaps", synced.namespace, {"metadata": {"name": "not-occs"}}
    )
    synced.kube_api.compact()
    assert synced.kube_api.cut_watches() == len(helpers.WATCHED_PLURALS)
    wait_for(
        lambda: set(_lists(synced.kube_api)) >= helpers.WATCHED_PLURALS,
        timeout=helpers.OBSERVED_TIMEOUT,
        message="every kind to be listed again",
    )
    assert all(
        request.status == 200
        for request in synced.kube_api.journal
        if request.query.get("watch", [""])[-1] != "true"
    )
    helpers.observed_healthy(synced.driver, synced.revision)
    synced.kube_api.remove(
        "configmaps", synced.namespace, naming.configuration_map(synced.revision.revision_id)
    )
    helpers.observed_with(synced.driver, synced.revision, observation.OBJECT_LOST)


def test_a_broken_stream_is_watched_again_from_where_it_stopped(synced: Synced) -> None:
    assert synced.kube_api.cut_watches() == len(helpers.WATCHED_PLURALS)
    synced.kube_api.remove(
        "secrets", synced.namespace, naming.credential_secret(synced.revision.revision_id)
    )
    helpers.observed_with(synced.driver, synced.revision, observation.OBJECT_LOST)
    helpers.wait_watching(synced.kube_api)
    assert _lists(synced.kube_api) == []  # no list: every change since was replayed


def test_a_cache_out_of_touch_beyond_its_bound_refuses_then_recovers(synced: Synced) -> None:
    synced.reinform(
        stale_after_s=3.0, timing=watching.Timing(session_s=(2, 2), backoff_s=(0.1, 0.2))
    )
    helpers.observed_healthy(synced.driver, synced.revision)
    synced.kube_api.stop()
    try:

        def refused() -> bool:
            try:
                helpers.observed(synced.driver, synced.revision)
            except base.TransientDriverError as exc:
                return exc.code == informer.NOT_OBSERVED
            return False

        wait_for(refused, timeout=10.0, message="observations to be refused")
    finally:
        synced.kube_api.start()
    helpers.observed_healthy(synced.driver, synced.revision)


def test_idle_kinds_stay_fresh_across_sessions_and_a_tighter_bound_is_refused(
    synced: Synced,
) -> None:
    short = watching.Timing(session_s=(1, 1), backoff_s=(0.1, 0.2))
    synced.reinform(stale_after_s=2.0, timing=short)
    helpers.observed_healthy(synced.driver, synced.revision)
    synced.kube_api.clear_journal()
    # nothing changes, sessions end and start again: every kind keeps proving it is current
    wait_for(
        lambda: len(helpers.watch_requests(synced.kube_api)) >= 3 * len(helpers.WATCHED_PLURALS),
        timeout=helpers.OBSERVED_TIMEOUT,
        message="three sessions of every watch",
    )
    assert helpers.observed(synced.driver, synced.revision).healthy
    with pytest.raises(ValueError, match="session"):
        informer.Informer(synced.driver.api, stale_after_s=1.0, timing=short)


def test_the_first_observation_waits_for_the_first_lists_and_refuses_without_them(
    synced: Synced,
) -> None:
    synced.reinform(sync_wait_s=0.5, timing=QUICK)
    synced.kube_api.deny("list", "secrets")
    with pytest.raises(base.TransientDriverError) as refused:
        helpers.observed(synced.driver, synced.revision)
    assert refused.value.code == informer.NOT_OBSERVED and "secrets" in refused.value.reason
    synced.kube_api.reset()  # access back, and an empty cluster: nothing of the revision is left
    helpers.observed_with(synced.driver, synced.revision, namespaces.NAMESPACE_MISSING)


def test_closing_the_driver_stops_every_watch_thread(synced: Synced) -> None:
    def watch_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("occ-kubernetes-watch-")]

    assert synced.driver.informer.running and len(watch_threads()) == len(helpers.WATCHED_PLURALS)
    synced.driver.close()
    assert not synced.driver.informer.running and watch_threads() == []
    helpers.observed_healthy(synced.driver, synced.revision)  # observing again starts it again
    assert len(watch_threads()) == len(helpers.WATCHED_PLURALS)
