"""Helpers of the ``docker`` driver's tests: drivers, revisions, and what occ left on the engine."""

from __future__ import annotations

import uuid
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute.docker import DockerComputeDriver, engine, naming, workload

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
        container.remove(force=True)
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
    return base.RevisionSpec(
        namespace_id=namespace_id,
        agent_id=agent_id,
        revision_id=f"rev_{uuid.uuid4().hex[:12]}",
        revision_number=number,
        configuration_generation=number,
        configuration_document=document or {"model": "stand-in", "n": number},
        harness_id="openclaw",
        harness_version="1.0.0",
        harness_mode="embedded",
        service_principal_id="prn_test",
        credential=None if credential is None else base.Credential(credential),
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
