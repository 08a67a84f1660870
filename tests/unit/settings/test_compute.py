"""The Compute Drivers' settings: the kubernetes installation's checks, the observation
interval and the observer's tick."""

from __future__ import annotations

from pathlib import Path

import pytest

from occ.drivers.compute.docker import driver as docker_driver
from occ.drivers.compute.kubernetes import driver as kubernetes_driver
from occ.drivers.compute.local import driver as local_driver
from occ.drivers.compute.ssh import driver as ssh_driver
from occ.foundation import errors
from occ.settings.config import Settings
from tests.unit.settings.support import from_env, refusal, yaml_file


def test_a_tenant_scoped_installation_needs_managed_namespaces() -> None:
    refused = refusal({"OCC_KUBERNETES_INSTALLATION": "tenant-scoped"})
    assert [error.pointer for error in refused.errors] == ["/kubernetes_managed_namespaces"]
    settings = from_env(
        {
            "OCC_KUBERNETES_INSTALLATION": "tenant-scoped",
            "OCC_KUBERNETES_MANAGED_NAMESPACES": " team-a, team-b,team-a ",
        }
    )
    assert settings.managed_namespaces == ("team-a", "team-b")


@pytest.mark.parametrize(
    ("env", "pointer"),
    [
        ({"OCC_KUBERNETES_INSTALLATION": "namespaced"}, "/kubernetes_installation"),
        ({"OCC_KUBERNETES_MANAGED_NAMESPACES": "Team_A"}, "/kubernetes_managed_namespaces"),
    ],
)
def test_a_bad_installation_setting_is_refused_naming_it(env: dict[str, str], pointer: str) -> None:
    refused = refusal(env)
    assert [error.pointer for error in refused.errors] == [pointer]
    assert "Team_A" not in refused.errors[0].message


def test_allowed_callers_and_authentication_cidrs_are_checked(tmp_path: Path) -> None:
    env = yaml_file(
        tmp_path,
        "kubernetes_allowed_callers:\n"
        "  - namespace: {kubernetes.io/metadata.name: edge}\n"
        "    pods: {app: proxy}\n"
        "  - pods: {app: client}\n",
    )
    settings = from_env({**env, "OCC_KUBERNETES_AUTHENTICATION_EGRESS": "10.0.0.0/8, ::1/128"})
    assert settings.kubernetes_allowed_callers == [
        {"namespace": {"kubernetes.io/metadata.name": "edge"}, "pods": {"app": "proxy"}},
        {"pods": {"app": "client"}},
    ]
    assert settings.authentication_egress == ("10.0.0.0/8", "::1/128")
    refused = refusal({"OCC_KUBERNETES_AUTHENTICATION_EGRESS": "auth.example.com"})
    assert [error.pointer for error in refused.errors] == ["/kubernetes_authentication_egress"]
    assert "auth.example.com" not in refused.errors[0].message
    refused = refusal(yaml_file(tmp_path, "kubernetes_allowed_callers:\n  - ip: {a: b}\n"))
    assert [error.pointer for error in refused.errors] == ["/kubernetes_allowed_callers"]


def test_the_token_lifetime_is_bounded() -> None:
    assert from_env({"OCC_KUBERNETES_TOKEN_LIFETIME_S": "600"}).kubernetes_token_lifetime_s == 600
    for raw in ("599", "86401"):
        refused = refusal({"OCC_KUBERNETES_TOKEN_LIFETIME_S": raw})
        assert [error.pointer for error in refused.errors] == ["/kubernetes_token_lifetime_s"]


@pytest.mark.parametrize(
    ("driver", "own_interval_s"),
    [
        ("local", local_driver.MAINTENANCE_INTERVAL_MS / 1000),
        ("docker", docker_driver.MAINTENANCE_INTERVAL_MS / 1000),
        ("kubernetes", kubernetes_driver.MAINTENANCE_INTERVAL_S),
        ("ssh", ssh_driver.MAINTENANCE_INTERVAL_S),
    ],
)
def test_the_observation_interval_is_the_drivers_own_unless_set(
    driver: str, own_interval_s: float
) -> None:
    assert Settings(compute_driver=driver).observation_interval_ms == own_interval_s * 1000
    chosen = Settings(compute_driver=driver, maintenance_interval_ms=5_000)
    assert chosen.observation_interval_ms == 5_000


@pytest.mark.parametrize(
    ("interval_ms", "tick_ms"),
    [(60_000, 7_500), (30_000, 3_750), (2_000, 1_000), (300, 1_000), (600_000, 10_000)],
)
def test_the_observer_ticks_an_eighth_of_the_interval_within_bounds(
    interval_ms: int, tick_ms: int
) -> None:
    settings = Settings(maintenance_interval_ms=interval_ms)
    assert settings.observer_tick_period_ms == tick_ms
    assert settings.replace(observer_tick_ms=250).observer_tick_period_ms == 250


def test_a_tick_period_must_be_positive() -> None:
    with pytest.raises(errors.InvalidInput):
        from_env({"OCC_OBSERVER_TICK_MS": "0"})
