"""The API's gateway log read in a tenant-scoped installation, with only the log reader's Role
that ``occ kubernetes rbac`` prints beside the workers' (a fake API server enforcing RBAC)."""

from __future__ import annotations

import uuid
from pathlib import Path

from occ.drivers.compute import base, runtime_logs
from occ.drivers.compute.kubernetes import access, rbac
from occ.drivers.compute.kubernetes import logs as kubernetes_logs
from occ.settings.config import Settings
from tests.integration.deploy import kubernetes_access
from tests.integration.drivers.kubernetes import helpers
from tests.support.kube_api import FakeKubeAPI
from tests.support.specs import log_target

MANAGED = "tenant-a"


def test_the_api_reads_logs_with_the_printed_log_reader_role_alone(
    kube_api: FakeKubeAPI, kubeconfig: Path
) -> None:
    settings = Settings(
        kubernetes_kubeconfig=str(kubeconfig),
        kubernetes_gateway_image=helpers.GATEWAY_IMAGE,
        kubernetes_request_timeout_ms=2_000,
        kubernetes_installation="tenant-scoped",
        kubernetes_managed_namespaces=MANAGED,
    )
    kube_api.create_foreign("namespaces", None, rbac.namespace(MANAGED))
    workers_role, workers_binding, *log_reader = rbac.provisioning([MANAGED])
    kube_api.grant_only([workers_role, workers_binding])
    namespace = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="a", existing_namespace=MANAGED)
    revision = helpers.deployed_with_log(settings, kube_api, namespace, "hello")

    kube_api.grant_only(log_reader)
    before = len(kube_api.journal)
    reader = kubernetes_logs.KubernetesLogs.from_settings(settings)
    lines = reader.read_logs(log_target(revision), runtime_logs.LogQuery(tail=1))
    assert list(lines) == ["hello"]

    read = kube_api.journal[before:]
    assert not [request for request in read if request.status in (401, 403)]
    used = kubernetes_access.used(read).access
    assert used == {
        kubernetes_access.Access(kind.group, kind.resource, verb)
        for verb, kind in access.NAMESPACED_LOG_READER_ACCESS
    }
