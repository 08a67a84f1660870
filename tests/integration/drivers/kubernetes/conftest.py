"""Fixtures for the ``kubernetes`` driver against the fake API server, over real HTTP.

``kube_api`` is one fake server per test; ``make_driver`` builds drivers the way a worker
does (``from_settings`` with a kubeconfig file), so the real client, its configuration
loading, JSON and model parsing all run. ``specs`` mints Namespace and revision specs;
``reconcile`` starts real workers and beat on the fake server and makes a world they reconciled.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver
from occ.settings.config import Settings
from occ.state.db import Database
from tests.integration.drivers.kubernetes import fleets, helpers
from tests.support import processes, worlds
from tests.support.kube_api import FakeKubeAPI

MakeDriver = Callable[..., KubernetesComputeDriver]
Reconcile = Callable[..., worlds.World]
"""``fleets.reconciled`` on the fake server's cluster: its keyword arguments, the world."""


@pytest.fixture
def kube_api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(validate=True) as fake:
        yield fake
        assert fake.validation_errors == [], "occ sent an object a real API server refuses"


@pytest.fixture
def kubeconfig(kube_api: FakeKubeAPI, tmp_path: Path) -> Path:
    return kube_api.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def reconcile(
    db: Database, env: dict[str, str], fleet: processes.Fleet, kubeconfig: Path
) -> Reconcile:
    return functools.partial(fleets.reconciled, db, env, fleet, kubeconfig)


@pytest.fixture
def make_driver(kubeconfig: Path) -> MakeDriver:
    def make(**settings: Any) -> KubernetesComputeDriver:
        values: dict[str, Any] = {
            "kubernetes_kubeconfig": str(kubeconfig),
            "kubernetes_gateway_image": helpers.GATEWAY_IMAGE,
            "kubernetes_request_timeout_ms": 2_000,
        }
        values.update(settings)
        return KubernetesComputeDriver.from_settings(Settings(**values))

    return make


@pytest.fixture
def driver(make_driver: MakeDriver) -> Iterator[KubernetesComputeDriver]:
    made = make_driver()
    yield made
    made.close()


@pytest.fixture
def operation() -> base.Operation:
    return base.Operation(work_id="work-1", claim_token="token-1", abort=threading.Event())


@pytest.fixture
def specs() -> helpers.Specs:
    return helpers.Specs(
        namespace=base.NamespaceSpec(id=f"ns_{uuid.uuid4()}", name="team"),
        agent_id=f"agt_{uuid.uuid4()}",
    )
