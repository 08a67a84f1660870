"""The ``kubernetes`` driver's runtime logs through the real client and the fake apiserver's
``pods/log``: the revision's gateway Pod, tail, since, follow and its deadline."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from pathlib import Path

import pytest

from occ.drivers.compute import base, runtime_logs
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, naming
from occ.drivers.compute.kubernetes import logs as kubernetes_logs
from occ.settings.config import Settings
from tests.integration.drivers.kubernetes import helpers
from tests.support import log_follows
from tests.support.kube_api import FakeKubeAPI
from tests.support.specs import log_target


@pytest.fixture
def reader(kubeconfig: Path) -> kubernetes_logs.KubernetesLogs:
    return kubernetes_logs.KubernetesLogs.from_settings(
        Settings(kubernetes_kubeconfig=str(kubeconfig), kubernetes_request_timeout_ms=2_000)
    )


@pytest.fixture
def deployed(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: helpers.Specs,
) -> tuple[str, str, base.RevisionSpec]:
    """A deployed revision: its Kubernetes namespace, its gateway Pod, the revision."""
    namespace, revision = helpers.deployed(driver, kube_api, operation, specs)
    selector = naming.selector({naming.AGENT_ID: revision.agent_id})
    [pod] = kube_api.objects("pods", namespace, selector)
    name = str(pod["metadata"]["name"])
    for n in range(1, 6):
        kube_api.write_log(namespace, name, f"line {n}")
    return namespace, name, revision


def test_tail_and_since_read_the_revisions_gateway_pod(
    reader: kubernetes_logs.KubernetesLogs,
    kube_api: FakeKubeAPI,
    deployed: tuple[str, str, base.RevisionSpec],
) -> None:
    namespace, pod, revision = deployed
    target = log_target(revision)
    assert reader.pod(target) == (namespace, pod)
    started, *written = reader.read_logs(target, runtime_logs.LogQuery())
    assert json.loads(started)["event"] == "gateway.started"  # printed as the gateway started
    assert written == [f"line {n}" for n in range(1, 6)]
    assert list(reader.read_logs(target, runtime_logs.LogQuery(tail=2))) == [
        "line 4",
        "line 5",
    ]
    hour_ago = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    assert len(list(reader.read_logs(target, runtime_logs.LogQuery(since=hour_ago)))) == 6
    [request] = [entry for entry in kube_api.journal if entry.path.endswith("/log")][-1:]
    assert request.query["container"] == ["gateway"]
    assert 3600 <= int(request.query["sinceSeconds"][0]) <= 3610


def test_follow_streams_new_lines_until_its_deadline(
    reader: kubernetes_logs.KubernetesLogs,
    kube_api: FakeKubeAPI,
    deployed: tuple[str, str, base.RevisionSpec],
) -> None:
    namespace, pod, revision = deployed
    query = runtime_logs.LogQuery(tail=1, follow=True, follow_s=2.0)
    started = time.monotonic()
    lines = reader.read_logs(log_target(revision), query)
    seen = iter(lines)
    assert next(seen) == "line 5"
    threading.Timer(0.3, kube_api.write_log, (namespace, pod, "later")).start()
    assert next(seen) == "later"
    assert list(seen) == []
    assert 1.5 <= time.monotonic() - started < 6.0


def test_close_ends_a_follow_early(
    reader: kubernetes_logs.KubernetesLogs, deployed: tuple[str, str, base.RevisionSpec]
) -> None:
    _, _, revision = deployed
    log_follows.assert_closed_early(log_follows.follow(reader, revision, 30.0), within_s=5.0)


def test_a_revision_without_a_pod_is_unavailable(
    reader: kubernetes_logs.KubernetesLogs,
    kube_api: FakeKubeAPI,
    deployed: tuple[str, str, base.RevisionSpec],
    specs: helpers.Specs,
) -> None:
    namespace, pod, revision = deployed
    other = specs.revision()
    with pytest.raises(base.PermanentDriverError) as raised:
        reader.read_logs(log_target(other), runtime_logs.LogQuery())
    assert raised.value.code == runtime_logs.UNAVAILABLE
    kube_api.remove("pods", namespace, pod)
    with pytest.raises(base.PermanentDriverError) as gone:
        reader.read_logs(log_target(revision), runtime_logs.LogQuery())
    assert gone.value.code == runtime_logs.UNAVAILABLE
