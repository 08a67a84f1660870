"""``occ doctor`` names each weak setting by its variable, never its value, and exits 1 then."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from occ.cli.doctor import doctor

STRONG = {
    "OCC_ENV": "production",
    "OCC_COMPUTE_DRIVER": "docker",
    "OCC_API_KEY_PEPPER": "pepper-" + "p" * 40,
    "OCC_SECRET_KEY": "secret-" + "s" * 40,
    "OCC_FINGERPRINT_KEY": "fingerprints-" + "f" * 40,
    "OCC_DATABASE_URL": "postgresql://occ_app:pw@db/occ",
    "OCC_BROKER_URL": "redis://:pw@redis:6379/0",
}


def _run(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> tuple[int, str]:
    for name in ("OCC_ENV", "OCC_API_KEY_PEPPER", "OCC_SECRET_KEY", "OCC_FINGERPRINT_KEY", "DYNO"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(doctor, [], env=env)
    return result.exit_code, result.output


def test_the_development_defaults_are_each_named(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = _run(monkeypatch, {"OCC_ENV": "development"})
    assert code == 1
    for line in (
        "weak: OCC_ENV is not production",
        "weak: OCC_API_KEY_PEPPER is the development default",
        "weak: OCC_SECRET_KEY is the development default",
        "weak: OCC_FINGERPRINT_KEY is unset",
        "weak: OCC_COMPUTE_DRIVER is local",
    ):
        assert line in output
    assert "development-pepper" not in output and "development-secret-key" not in output


def test_a_strong_production_configuration_has_nothing_weak(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, output = _run(monkeypatch, STRONG)
    assert (code, output.strip()) == (0, "occ doctor: nothing weak found")


def test_a_url_without_a_password_is_weak_and_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, output = _run(monkeypatch, {**STRONG, "OCC_BROKER_URL": "redis://redis:6379/0"})
    assert code == 1
    assert output.strip() == "weak: OCC_BROKER_URL has no password"


def test_invalid_settings_are_refused_as_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = _run(monkeypatch, {"DYNO": "web.1"})
    assert code == 2
    assert "OCC_API_KEY_PEPPER" in output or "api_key_pepper" in output
    assert "hosting platform" in output


def test_an_unset_environment_is_listed_with_the_rest_and_exits_as_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unset = {key: value for key, value in STRONG.items() if key != "OCC_ENV"}
    code, output = _run(monkeypatch, {**unset, "OCC_BROKER_URL": "redis://redis:6379/0"})
    assert code == 2
    assert output.splitlines() == [
        "weak: OCC_ENV is unset: every process but occ dev refuses to start",
        "weak: OCC_BROKER_URL has no password",
    ]
