"""The ``kubernetes`` driver's whole lifecycle against the fake API server, for RBAC checks.

``run`` drives every kind of request the driver makes (preflight, a Namespace created and
one adopted, embedded and dedicated Agents deployed, observed, redeployed, stopped, retired
and deleted, Namespaces deleted), playing the cluster's controllers where the driver waits
on them, so that the fake's journal holds all of it. It asserts only what it needs to go on.
"""

from __future__ import annotations

import threading
import uuid

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver
from occ.settings.config import Settings
from tests.integration.drivers.kubernetes import helpers
from tests.support.kube_api import FakeKubeAPI


def _operation() -> base.Operation:
    return base.Operation(work_id="work-1", claim_token="token-1", abort=threading.Event())


def run(kube_api: FakeKubeAPI, settings: Settings) -> None:
    """Everything the driver does: preflight, a Namespace created and adopted, embedded and
    dedicated Agents deployed, redeployed, stopped, retired and deleted, Namespaces deleted.
    Later steps use fresh drivers, which find their namespace again by label."""
    operation = _operation()
    driver = KubernetesComputeDriver.from_settings(settings)
    driver.preflight()
    specs = helpers.Specs(
        namespace=base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="team"),
        agent_id=f"agt_{uuid.uuid4()}",
    )
    assert isinstance(driver.ensure_namespace(operation, specs.namespace), base.Ready)
    first = specs.revision()
    helpers.deploy(driver, kube_api, operation, first)
    helpers.observed_healthy(driver, first)
    helpers.wait_watching(kube_api)
    driver.close()

    driver = KubernetesComputeDriver.from_settings(settings)
    second = specs.revision()
    helpers.deploy(driver, kube_api, operation, second)
    driver.retire_revision(operation, first)
    driver.stop_revision(operation, second)

    name = driver.kubernetes_namespace(specs.namespace.id)
    assert name is not None
    dedicated_agent = helpers.dedicated_handover(driver, kube_api, operation, specs, name)

    driver.delete_agent_credentials(operation, specs.namespace.id, specs.agent_id)
    driver.delete_agent_credentials(operation, specs.namespace.id, dedicated_agent)
    assert isinstance(driver.delete_namespace(operation, specs.namespace), base.Pending)
    kube_api.finish_namespace_deletion(name)
    assert isinstance(driver.delete_namespace(operation, specs.namespace), base.Ready)
    assert kube_api.get("namespaces", None, name) is None

    kube_api.create_foreign("namespaces", None, {"metadata": {"name": "tenant-a"}})
    adopted = base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="a", existing_namespace="tenant-a")
    tenant = helpers.Specs(namespace=adopted, agent_id=f"agt_{uuid.uuid4()}")
    assert isinstance(driver.ensure_namespace(operation, adopted), base.Ready)
    helpers.deploy(driver, kube_api, operation, tenant.revision())
    observation = driver.delete_namespace(operation, adopted)
    while isinstance(observation, base.Pending):
        observation = driver.delete_namespace(operation, adopted)
    assert kube_api.objects("deployments", "tenant-a") == []
    driver.close()
