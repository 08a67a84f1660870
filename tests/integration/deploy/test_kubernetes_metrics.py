"""Metrics in the kubernetes layout: each program can claim its multiprocess directory under
a read-only root, and the workers serve their listener on the port the network policy opens
to scrapers (``test_kubernetes_manifests.py`` holds the policies themselves)."""

from __future__ import annotations

import pytest

from occ.process_table import table
from occ.telemetry import metrics_directory
from tests.integration.deploy import kubernetes_files


@pytest.mark.parametrize(
    "workload",
    [w for w in kubernetes_files.workloads() if w.kind == "Deployment"],
    ids=lambda w: w.name,
)
def test_each_program_can_claim_its_metrics_directory(
    workload: kubernetes_files.Workload,
) -> None:
    """Each program refuses to start unless it claims its ``PROMETHEUS_MULTIPROC_DIR``; under
    a read-only root that directory must be a writable volume of the pod's own."""
    volumes = {volume["name"]: volume for volume in workload.pod["volumes"]}
    for container in workload.pod["containers"]:
        environment = kubernetes_files.container_environment(container)
        directory = environment.get(metrics_directory.VARIABLE, table.IMAGE_METRICS)
        holding = [
            mount
            for mount in container["volumeMounts"]
            if f"{directory}/".startswith(f"{mount['mountPath'].rstrip('/')}/")
        ]
        assert holding, f"{directory} is on the read-only root"
        mount = max(holding, key=lambda mount: len(mount["mountPath"]))
        assert not mount.get("readOnly") and "emptyDir" in volumes[mount["name"]]


@pytest.mark.parametrize("name", ["occ-control", "occ-drivers"])
def test_workers_serve_their_metrics_on_the_port_the_policy_opens(name: str) -> None:
    (container,) = kubernetes_files.workload(name).pod["containers"]
    environment = kubernetes_files.container_environment(container)
    assert container["ports"] == [
        {"name": "metrics", "containerPort": kubernetes_files.LISTENS_ON["control"]}
    ]
    assert environment["OCC_METRICS_PORT"] == str(kubernetes_files.LISTENS_ON["control"])
    assert environment["OCC_METRICS_ADDRESS"] == "0.0.0.0"
