"""Helpers of the ``docker`` driver's tests: drivers, revisions, and what occ left on the engine."""

from __future__ import annotations

import functools
import os
import uuid
from typing import Any

import docker
import pytest

from occ.drivers.compute import base
from occ.drivers.compute.docker import DockerComputeDriver, engine, naming, workload
from scripts import docker_engine
from tests.support import specs

IMAGE = "occ-standin-gateway:dev"
LIMITS = workload.Limits(memory_bytes=128 * 1024 * 1024, nano_cpus=500_000_000, pids=64)


def make_driver(host: str, **options: Any) -> DockerComputeDriver:
    return DockerComputeDriver(
        engine.Engine(host, timeout_s=30), image=IMAGE, limits=LIMITS, **options
    )


def sweep(client: Any, namespace_id: str) -> None:
    """Remove every container, volume and network labelled with ``namespace_id``."""
    label = f"{naming.NAMESPACE_ID}={namespace_id}"
    for container in client.containers.list(all=True, filters={"label": label}):
        try:
            container.remove(force=True)
        except docker.errors.APIError as exc:  # gone meanwhile, or the driver removing it
            if exc.status_code not in (404, 409):
                raise
    for volume in client.volumes.list(filters={"label": label}):
        volume.remove(force=True)
    for network in client.networks.list(filters={"label": label}):
        network.remove()


def revision(
    namespace_id: str,
    agent_id: str,
    number: int = 1,
    *,
    document: dict[str, Any] | None = None,
    credential: str | None = "sk-docker-test-credential",
) -> base.RevisionSpec:
    return specs.revision(
        namespace_id=namespace_id,
        agent_id=agent_id,
        revision_id=f"rev_{uuid.uuid4().hex[:12]}",
        revision_number=number,
        configuration_generation=number,
        configuration_document=document or {"model": "stand-in", "n": number},
        service_principal_id="prn_test",
        credential=specs.credential(credential),
    )


def owned_objects(client: Any, namespace_id: str) -> dict[str, list[str]]:
    """Names of the containers, volumes and networks labelled with ``namespace_id``."""
    label = f"{naming.NAMESPACE_ID}={namespace_id}"
    return {
        "containers": sorted(
            c.name for c in client.containers.list(all=True, filters={"label": label})
        ),
        "volumes": sorted(v.name for v in client.volumes.list(filters={"label": label})),
        "networks": sorted(n.name for n in client.networks.list(filters={"label": label})),
    }


@functools.cache
def engine_host() -> str:
    """The engine of the Docker tests (``OCC_TEST_DOCKER_HOST``; a failure when unset), with
    the stand-in image built from this tree once per run (nothing to do when it is current)."""
    host = os.environ.get("OCC_TEST_DOCKER_HOST")
    if not host:
        pytest.fail("OCC_TEST_DOCKER_HOST is not set: run `make services`")
    docker_engine.PrivateEngine.build_image_on(host)
    return host


def engine_client(host: str) -> Any:
    return docker.DockerClient(base_url=host, timeout=30)


def _managed(client: Any) -> list[tuple[str, Any]]:
    label = {"label": f"{naming.MANAGED}=true"}
    return [
        *(("container", c) for c in client.containers.list(all=True, filters=label)),
        *(("volume", v) for v in client.volumes.list(filters=label)),
        *(("network", n) for n in client.networks.list(filters=label)),
    ]


def managed_ids(client: Any) -> frozenset[str]:
    """Ids of every object with occ's labels on the engine."""
    return frozenset(str(obj.id) for _, obj in _managed(client))


def managed_state(client: Any) -> frozenset[tuple[str, ...]]:
    """Every object with occ's labels and what a change to it would alter (its id, a
    container's start time, status and network aliases)."""
    state = set()
    for kind, obj in _managed(client):
        detail: tuple[str, ...] = ()
        if kind == "container":
            attrs = client.api.inspect_container(obj.id)
            networks = attrs["NetworkSettings"]["Networks"] or {}
            detail = (
                attrs["State"]["Status"],
                attrs["State"]["StartedAt"],
                repr(
                    sorted((name, sorted(n.get("Aliases") or [])) for name, n in networks.items())
                ),
            )
        state.add((kind, str(obj.name), str(obj.id), *detail))
    return frozenset(state)


def remove_managed(client: Any, *, keep: frozenset[str]) -> None:
    """Remove every object with occ's labels that is not in ``keep``."""
    for kind, obj in _managed(client):
        if kind in ("container", "volume") and str(obj.id) not in keep:
            obj.remove(force=True)  # containers are listed first: their volumes are free then
    for kind, obj in _managed(client):
        if kind == "network" and str(obj.id) not in keep:
            obj.remove()
