"""The ``docker`` driver on a real Docker Engine: networks, hardened gateway containers,
idempotency and repair, ownership, the credential channel, teardown and preflight."""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.docker import DockerComputeDriver, engine, naming, workload
from tests.integration.drivers.docker.objects import (
    IMAGE,
    LIMITS,
    make_driver,
    owned_objects,
    revision,
)
from tests.support.processes import wait_for

SECRET = "sk-docker-test-credential"


def _health(endpoint: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{endpoint}/healthz", timeout=3) as response:
        body: dict[str, Any] = json.loads(response.read())
        return body


def _ready(driver: DockerComputeDriver, operation: base.Operation, spec: base.RevisionSpec) -> str:
    observation = driver.prepare_revision(operation, spec)
    assert isinstance(observation, base.Ready), observation
    endpoint = observation.details["endpoint"]
    assert isinstance(endpoint, str)
    return endpoint


def _aliases(client: Any, container_name: str, namespace_id: str) -> list[str]:
    attrs = client.api.inspect_container(container_name)
    network = attrs["NetworkSettings"]["Networks"][naming.network(namespace_id)]
    return [alias for alias in network.get("Aliases") or [] if "-" in alias]


# -- Namespaces --------------------------------------------------------------------------------


def test_ensure_namespace_creates_one_labelled_network_and_repeats_change_nothing(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    spec = base.NamespaceSpec(namespace_id, "team")
    assert driver.ensure_namespace(operation, spec) == base.Ready(
        {"network": naming.network(namespace_id)}
    )
    [network] = client.networks.list(names=[naming.network(namespace_id)])
    assert network.attrs["Labels"] == {
        naming.MANAGED: "true",
        naming.DRIVER: "docker",
        naming.NAMESPACE_ID: namespace_id,
    }
    assert network.attrs["Driver"] == "bridge"
    driver.ensure_namespace(operation, spec)
    make_driver(driver.engine.base_url or "").ensure_namespace(operation, spec)
    assert [n.id for n in client.networks.list(names=[naming.network(namespace_id)])] == [
        network.id
    ]


def test_an_unlabelled_network_with_occs_name_is_refused_and_left_alone(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    squatter = client.networks.create(naming.network(namespace_id), driver="bridge")
    try:
        with pytest.raises(base.PermanentDriverError) as refused:
            driver.ensure_namespace(operation, base.NamespaceSpec(namespace_id, "team"))
        assert refused.value.code == "DOCKER_OBJECT_NOT_OWNED"
        squatter.reload()
        assert squatter.attrs["Labels"] == {}
        # deletion does not touch it either: it is not occ's
        assert driver.delete_namespace(operation, base.NamespaceSpec(namespace_id, "team")) == (
            base.Ready()
        )
        squatter.reload()
    finally:
        squatter.remove()


def test_a_network_whose_name_merely_contains_occs_name_is_not_mistaken_for_it(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    longer = client.networks.create(
        naming.network(namespace_id) + "-other", labels=naming.owned(namespace_id)
    )
    try:
        driver.ensure_namespace(operation, base.NamespaceSpec(namespace_id, "team"))
        names = sorted(n.name for n in client.networks.list(names=[naming.network(namespace_id)]))
        assert names == [naming.network(namespace_id), naming.network(namespace_id) + "-other"]
    finally:
        longer.remove()


# -- revisions ---------------------------------------------------------------------------------


def test_a_prepared_revision_is_a_hardened_healthy_container_serving_its_snapshot(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    spec = revision(namespace_id, "agt_hardened", document={"model": "m", "tools": ["a"]})
    endpoint = _ready(driver, operation, spec)
    health = _health(endpoint)
    assert health["status"] == "ok"
    assert health["revisionId"] == spec.revision_id
    assert (
        health["credentialFingerprint"]
        == base.Credential(SECRET, "test-fingerprint-key").fingerprint
    )
    request = urllib.request.Request(
        f"{endpoint}/config", headers={"Authorization": f"Bearer {SECRET}"}
    )
    with urllib.request.urlopen(request, timeout=3) as response:
        assert json.loads(response.read()) == {"model": "m", "tools": ["a"]}
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{endpoint}/config", timeout=3)
    assert refused.value.code == 401

    attrs = client.api.inspect_container(naming.gateway(spec.revision_id))
    host = attrs["HostConfig"]
    assert host["ReadonlyRootfs"] is True
    assert host["Privileged"] is False
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Init"] is True
    assert (host["Memory"], host["NanoCpus"], host["PidsLimit"]) == (
        LIMITS.memory_bytes,
        LIMITS.nano_cpus,
        LIMITS.pids,
    )
    assert host["PortBindings"] == {"8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": ""}]}
    assert host["RestartPolicy"]["Name"] in ("no", "")
    assert host["LogConfig"] == {
        "Type": "json-file",
        "Config": {"max-size": str(LIMITS.log_max_bytes), "max-file": str(LIMITS.log_files)},
    }
    assert set(host["Tmpfs"]) == {workload.SECRETS_DIR}
    assert host["Binds"] == [f"{naming.snapshot(spec.revision_id)}:{workload.CONFIG_DIR}:ro"]
    assert attrs["Config"]["User"] == workload.USER
    assert attrs["Config"]["Healthcheck"]["Test"][:2] == ["CMD", "/usr/bin/python3"]
    labels = attrs["Config"]["Labels"]
    assert {k: v for k, v in labels.items() if k.startswith(naming.PREFIX)} == {
        **naming.owned(namespace_id),
        naming.AGENT_ID: "agt_hardened",
        naming.REVISION_ID: spec.revision_id,
        naming.REVISION_NUMBER: "1",
        naming.ROLE: naming.GATEWAY,
        naming.CONFIGURATION_GENERATION: "1",
        naming.CREDENTIAL_CHANNEL: "stdin",
    }
    assert attrs["NetworkSettings"]["Ports"]["8080/tcp"][0]["HostIp"] == "127.0.0.1"
    # the credential is nowhere the engine shows: not in inspect (labels, env, args), not logs
    logs = client.api.logs(attrs["Id"]).decode()
    assert "gateway.started" in logs
    for text in (json.dumps(attrs), logs, json.dumps(client.api.inspect_image(IMAGE))):
        assert SECRET not in text
    # inside, it is a 0600 file of the gateway's user on the tmpfs
    mode = client.api.exec_create(
        attrs["Id"],
        [
            "/usr/bin/python3",
            "-S",
            "-c",
            "import os;s=os.stat('/run/occ/credential');print(oct(s.st_mode&0o777),s.st_uid)",
        ],
    )
    assert client.api.exec_start(mode["Id"]).decode().split() == ["0o600", "10001"]


def test_repeated_passes_change_nothing(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    spec = revision(namespace_id, "agt_repeat")
    _ready(driver, operation, spec)
    first = driver.activate_revision(operation, spec)
    before = client.api.inspect_container(naming.gateway(spec.revision_id))
    for _ in range(3):
        _ready(driver, operation, spec)
        assert driver.activate_revision(operation, spec) == first
    after = client.api.inspect_container(naming.gateway(spec.revision_id))
    assert (after["Id"], after["State"]["StartedAt"]) == (
        before["Id"],
        before["State"]["StartedAt"],
    )
    assert owned_objects(client, namespace_id) == {
        "containers": [naming.gateway(spec.revision_id)],
        "volumes": [naming.snapshot(spec.revision_id)],
        "networks": [naming.network(namespace_id)],
    }


def test_a_removed_container_is_recreated_and_an_exited_one_restarted(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    spec = revision(namespace_id, "agt_repair")
    _ready(driver, operation, spec)
    name = naming.gateway(spec.revision_id)
    original = client.containers.get(name)
    original.remove(force=True)  # behind occ's back
    client.networks.get(naming.network(namespace_id)).remove()
    endpoint = _ready(driver, operation, spec)
    recreated = client.containers.get(name)
    assert recreated.id != original.id
    assert (
        _health(endpoint)["credentialFingerprint"]
        == base.Credential(SECRET, "test-fingerprint-key").fingerprint
    )

    recreated.stop(timeout=2)
    assert isinstance(
        driver.prepare_revision(operation, revision_without_credential(spec)), base.Pending
    ), "an exited gateway waiting for its credential cannot start without one"
    endpoint = _ready(driver, operation, spec)
    assert client.containers.get(name).id == recreated.id
    health = _health(endpoint)
    assert (health["revisionId"], health["credentialFingerprint"]) == (
        spec.revision_id,
        base.Credential(SECRET, "test-fingerprint-key").fingerprint,
    )


def test_a_gateway_whose_network_was_made_again_is_replaced(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    spec = revision(namespace_id, "agt_renet")
    _ready(driver, operation, spec)
    original = client.containers.get(naming.gateway(spec.revision_id))
    original.stop(timeout=2)
    client.networks.get(naming.network(namespace_id)).remove()  # behind occ's back

    def converged() -> str | None:
        observation = driver.prepare_revision(operation, spec)
        return observation.details["endpoint"] if isinstance(observation, base.Ready) else None

    endpoint = wait_for(converged, timeout=30, message="the gateway to be replaced")
    assert client.containers.get(naming.gateway(spec.revision_id)).id != original.id
    assert _health(endpoint)["revisionId"] == spec.revision_id


def revision_without_credential(spec: base.RevisionSpec) -> base.RevisionSpec:
    return dataclasses.replace(spec, credential=None)


def test_a_new_driver_instance_finds_everything_by_labels(
    driver: DockerComputeDriver,
    operation: base.Operation,
    namespace_id: str,
    client: Any,
    docker_host: str,
) -> None:
    spec = revision(namespace_id, "agt_found")
    _ready(driver, operation, spec)
    activation = driver.activate_revision(operation, spec)
    container_id = client.containers.get(naming.gateway(spec.revision_id)).id

    fresh = make_driver(docker_host)
    assert fresh.activate_revision(operation, spec) == activation
    assert [c["Id"] for c in fresh.agent_containers(namespace_id, "agt_found")] == [container_id]
    fresh.retire_revision(operation, spec)
    assert owned_objects(client, namespace_id)["containers"] == []
    assert owned_objects(client, namespace_id)["volumes"] == []


def test_activation_moves_the_agent_alias_and_retirement_removes_the_old_revision(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    first = revision(namespace_id, "agt_alias", 1)
    second = revision(namespace_id, "agt_alias", 2, credential="sk-second")
    alias = naming.agent_alias("agt_alias")
    _ready(driver, operation, first)
    driver.activate_revision(operation, first)
    assert alias in _aliases(client, naming.gateway(first.revision_id), namespace_id)

    _ready(driver, operation, second)
    activation = driver.activate_revision(operation, second)
    assert isinstance(activation, base.Activation) and activation.endpoint is not None
    assert _health(activation.endpoint)["revisionId"] == second.revision_id
    assert alias in _aliases(client, naming.gateway(second.revision_id), namespace_id)
    assert alias not in _aliases(client, naming.gateway(first.revision_id), namespace_id)

    driver.retire_revision(operation, first)
    driver.retire_revision(operation, first)  # idempotent
    assert owned_objects(client, namespace_id)["containers"] == [naming.gateway(second.revision_id)]
    assert owned_objects(client, namespace_id)["volumes"] == [naming.snapshot(second.revision_id)]


def test_stop_keeps_the_container_and_its_snapshot(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    spec = revision(namespace_id, "agt_stop")
    _ready(driver, operation, spec)
    driver.stop_revision(operation, spec)
    driver.stop_revision(operation, spec)
    container = client.containers.get(naming.gateway(spec.revision_id))
    assert container.status == "exited"
    assert owned_objects(client, namespace_id)["volumes"] == [naming.snapshot(spec.revision_id)]


def test_a_gateway_that_never_becomes_healthy_stays_pending(
    docker_host: str, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    driver = make_driver(docker_host, readiness_wait_s=1.0)
    spec = revision(namespace_id, "agt_sick", document={"standIn": {"healthy": False}})
    for _ in range(2):
        assert driver.prepare_revision(operation, spec) == base.Pending("REVISION_INCOMPLETE")
    assert client.containers.get(naming.gateway(spec.revision_id)).status == "running"
    assert driver.activate_revision(operation, spec) == base.Pending("REVISION_INCOMPLETE")


def test_an_aborted_operation_stops_before_touching_the_engine(
    driver: DockerComputeDriver, namespace_id: str, client: Any
) -> None:
    aborted = base.Operation("test:work", "token", threading.Event())
    aborted.abort.set()
    with pytest.raises(base.Aborted):
        driver.prepare_revision(aborted, revision(namespace_id, "agt_abort"))
    assert owned_objects(client, namespace_id) == {"containers": [], "volumes": [], "networks": []}


# -- teardown ----------------------------------------------------------------------------------


def test_agent_and_namespace_deletion_leave_nothing_and_refuse_a_foreign_endpoint(
    driver: DockerComputeDriver, operation: base.Operation, namespace_id: str, client: Any
) -> None:
    namespace = base.NamespaceSpec(namespace_id, "team")
    driver.ensure_namespace(operation, namespace)
    kept = revision(namespace_id, "agt_kept")
    for spec in (revision(namespace_id, "agt_gone", 1), revision(namespace_id, "agt_gone", 2)):
        _ready(driver, operation, spec)
    _ready(driver, operation, kept)

    driver.delete_agent_credentials(operation, namespace_id, "agt_gone")
    driver.delete_agent_credentials(operation, namespace_id, "agt_gone")
    assert owned_objects(client, namespace_id)["containers"] == [naming.gateway(kept.revision_id)]

    foreign = client.containers.create(
        IMAGE,
        [
            "--port",
            "8080",
            "--revision-id",
            "x",
            "--agent-id",
            "x",
            "--generation",
            "1",
            "--config",
            "/etc/occ/configuration.json",
        ],
        name=f"foreign-{namespace_id}",
        network=naming.network(namespace_id),
    )
    try:
        foreign.start()
        with pytest.raises(base.PermanentDriverError) as refused:
            driver.delete_namespace(operation, namespace)
        assert refused.value.code == "DOCKER_NETWORK_IN_USE"
        assert f"foreign-{namespace_id}" in refused.value.reason
    finally:
        foreign.remove(force=True)
    assert driver.delete_namespace(operation, namespace) == base.Ready()
    assert driver.delete_namespace(operation, namespace) == base.Ready()
    assert owned_objects(client, namespace_id) == {"containers": [], "volumes": [], "networks": []}


# -- preflight ---------------------------------------------------------------------------------


def test_preflight_checks_the_engine_and_the_image(docker_host: str, tmp_path: Any) -> None:
    make_driver(docker_host).preflight()

    missing = DockerComputeDriver(
        engine.Engine(docker_host, timeout_s=10), image="occ-no-such-image:dev", limits=LIMITS
    )
    with pytest.raises(base.PermanentDriverError) as refused:
        missing.preflight()
    assert refused.value.code == "DOCKER_GATEWAY_IMAGE_MISSING"
    assert "OCC_DOCKER_GATEWAY_IMAGE" in refused.value.reason
    assert "scripts/build-standin-image.sh" in refused.value.reason

    # constructing a driver for an engine that is not there is fine; using it is transient
    absent = make_driver(f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(base.TransientDriverError) as unavailable:
        absent.preflight()
    assert unavailable.value.code == "DOCKER_ENGINE_UNAVAILABLE"
    with pytest.raises(base.TransientDriverError):
        absent.ensure_namespace(
            base.Operation("w", "t", threading.Event()),
            base.NamespaceSpec("ns_absent", "absent"),
        )
