"""The client's rate limit on real requests: every request of a pass waits for its token, the
observation cache's lists and watches never do, and the settings size the bucket."""

from __future__ import annotations

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, ratelimit
from tests.integration.drivers.kubernetes import helpers
from tests.integration.drivers.kubernetes.conftest import MakeDriver
from tests.support.clock import ManualClock
from tests.support.kube_api import FakeKubeAPI


def test_each_request_of_a_pass_waits_its_turn_and_the_cache_never_does(
    driver: KubernetesComputeDriver,
    kube_api: FakeKubeAPI,
    operation: base.Operation,
    specs: helpers.Specs,
) -> None:
    slept: list[float] = []
    driver.api.limiter = ratelimit.TokenBucket(10, 1, clock=ManualClock(), sleep=slept.append)
    _, revision = helpers.deployed(driver, kube_api, operation, specs)
    requests = len(kube_api.journal)
    assert requests > 10
    # the clock stands still: each request after the first waits one more tenth of a second
    assert slept == pytest.approx([n / 10 for n in range(1, requests)])

    helpers.observed_healthy(driver, revision)
    helpers.wait_watching(kube_api)
    assert len(kube_api.journal) > requests  # the cache listed and watched...
    assert len(slept) == requests - 1  # ...without a token


def test_the_settings_size_the_bucket(make_driver: MakeDriver) -> None:
    made = make_driver(kubernetes_qps=7, kubernetes_burst=21)
    limiter = made.api.limiter
    assert limiter is not None and (limiter.qps, limiter.burst) == (7.0, 21)
    made.close()
