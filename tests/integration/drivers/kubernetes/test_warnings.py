"""The ``kubernetes`` driver's activation carries the startup warnings its gateway printed in
its ``gateway.started`` line (read from the ready Pod's log through the fake API server), and a
deploy through real workers ends with them in its deployment status."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from occ.controller import configurations
from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, naming, startup
from occ.foundation import codes
from occ.state.db import Database
from tests.integration.drivers.kubernetes import fleets, helpers
from tests.integration.drivers.kubernetes.conftest import Reconcile
from tests.support import processes, worlds
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

PLUGINS: dict[str, Any] = {
    "model": "m",
    "plugins": {"entries": {"memory": {}, "voice": {"enabled": False}}},
}
WARNINGS = (base.StartupWarning("PLUGIN_UNAVAILABLE", "memory"),)


def _log_reads(kube_api: FakeKubeAPI) -> list[dict[str, list[str]]]:
    return [r.query for r in kube_api.journal if r.method == "GET" and r.path.endswith("/log")]


@pytest.mark.parametrize("mode", ["embedded", "dedicated"])
def test_an_activation_carries_the_warnings_of_its_gateways_start_line(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: helpers.Specs,
    mode: str,
) -> None:
    helpers.ready_namespace(driver, operation, specs)

    warned = helpers.deploy(
        driver, kube_api, operation, specs.revision(mode=mode, document=PLUGINS)
    )
    plain = helpers.deploy(
        driver, kube_api, operation, specs.revision(mode=mode, agent_id=f"agt_{uuid.uuid4()}")
    )

    assert warned.warnings == WARNINGS
    assert plain.warnings == ()
    reads = _log_reads(kube_api)
    assert len(reads) == 2
    for query in reads:  # a bounded read of the start of the gateway container's log
        assert query["container"] == ["gateway"]
        assert query["limitBytes"] == [str(startup.LOG_LIMIT_BYTES)]
        assert "follow" not in query


def _rolled_out(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: helpers.Specs,
) -> tuple[str, str, base.RevisionSpec]:
    """An embedded revision whose rollout is done, not activated yet: the Kubernetes
    namespace, its gateway Pod and the revision."""
    namespace = helpers.ready_namespace(driver, operation, specs)
    revision = specs.revision(document=PLUGINS)
    assert isinstance(driver.prepare_revision(operation, revision), base.Ready)
    assert isinstance(driver.activate_revision(operation, revision), base.Pending)
    kube_api.mark_rollout(namespace, helpers.gateway_name(revision))
    [pod] = kube_api.objects("pods", namespace, naming.selector({naming.AGENT_ID: specs.agent_id}))
    return namespace, str(pod["metadata"]["name"]), revision


def test_a_malformed_start_line_fails_the_activation(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: helpers.Specs,
) -> None:
    namespace, pod, revision = _rolled_out(driver, kube_api, operation, specs)
    malformed = '{"event":"gateway.started","revisionId":"%s","warnings":"memory"}'
    kube_api.restart_container(namespace, pod, [malformed % revision.revision_id])

    observation = driver.activate_revision(operation, revision)

    assert observation == base.Failed(
        codes.Code.INVALID_DRIVER_OBSERVATION,
        permanent=True,
        reason="the gateway's start line reports malformed warnings",
    )


def test_a_log_without_a_start_line_or_not_readable_yet_has_no_warnings(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: helpers.Specs,
) -> None:
    namespace, pod, revision = _rolled_out(driver, kube_api, operation, specs)
    kube_api.restart_container(namespace, pod, ["booting"])
    empty = driver.activate_revision(operation, revision)
    assert isinstance(empty, base.Activation) and empty.warnings == ()

    kube_api.inject("GET", r"/pods/[^/]+/log$", status=400)  # the container is waiting
    waiting = driver.activate_revision(operation, revision)
    assert isinstance(waiting, base.Activation) and waiting.warnings == ()


def test_a_deploy_ends_with_its_gateways_warnings_in_the_deployment_status(
    db: Database, env: dict[str, str], kube_api: FakeKubeAPI, reconcile: Reconcile
) -> None:
    world = reconcile(installation="warnings")
    namespace = naming.kubernetes_namespace("occ-", world.namespace_id)
    gateway = naming.agent_object(world.agent_id)

    def deployed() -> str:
        revision_id = worlds.deploy(db, world)
        processes.nudge(env)

        def runs_revision() -> bool:
            found = kube_api.get("deployments", namespace, gateway)
            template = (found or {}).get("spec", {}).get("template", {})
            annotations = template.get("metadata", {}).get("annotations") or {}
            return annotations.get(naming.REVISION_ANNOTATION) == revision_id

        wait_for(runs_revision, timeout=fleets.TIMEOUT, message="the template to switch")
        kube_api.mark_rollout(namespace, gateway)
        wait_for(
            lambda: worlds.state_is(db, world, revision_id, "active", "failed"),
            timeout=fleets.TIMEOUT,
            message="the deployment to end",
        )
        return revision_id

    plain = deployed()
    assert worlds.deployment(db, world, plain).state == "active"
    assert worlds.deployment(db, world, plain).warnings == ()

    configurations.update_configuration(
        db,
        world.admin,
        configurations.UpdateConfiguration(
            namespace_id=world.namespace_id,
            configuration_id=world.configuration_id,
            document=PLUGINS,
        ),
    )
    warned = deployed()
    status = worlds.deployment(db, world, warned)
    assert (status.state, status.error) == ("active", None)
    assert [dict(warning) for warning in status.warnings] == [
        {"code": "PLUGIN_UNAVAILABLE", "detail": "memory"}
    ]
    assert worlds.deployment(db, world, plain).warnings == ()
