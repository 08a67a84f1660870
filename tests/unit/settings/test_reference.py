"""The settings reference says what the code does: every field is documented once, each
documented variable (and ``_FILE`` form, and fallback) sets its setting, and the documentation
names no variable that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from occ.settings import reference
from occ.settings.config import Settings

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = {
    "environment": "production",
    "database_url": "postgresql+psycopg://app@db.example/occ",
    "migration_database_url": "postgresql+psycopg://owner@db.example/occ",
    "compute_driver": "docker",
    "log_level": "DEBUG",
    "api_key_pepper": "pepper-" + "p" * 40,
    "secret_key": "secret-" + "s" * 40,
    "fingerprint_key": "fingerprints-" + "f" * 40,
    "rate_limit_failed_auth": "5/minute",
    "rate_limit_per_principal": "100/second",
    "rate_limit_per_address": "1000/hour",
    "kubernetes_installation": "cluster",
    "kubernetes_managed_namespaces": "team-a,team-b",
    "kubernetes_authentication_egress": "10.0.0.0/8,192.0.2.1/32",
    "kubernetes_token_lifetime_s": "900",
    "auth_secret": "auth-" + "a" * 40,
    "auth_base_url": "https://occ.example",
    "auth_native_admin": "on",
    "auth_cookie_domain": "occ.example",
    "auth_oidc_discovery_url": "https://id.example/.well-known/openid-configuration",
}
"""A valid value of each setting whose value is checked (the others take any text)."""
NOT_SETTINGS = {
    "OCC_CONFIG_PATH": "the YAML file of the settings",
    "OCC_URL": "the client's API address (docs/client.md)",
    "OCC_API_KEY": "the client's key (docs/client.md)",
    "OCC_NAMESPACE": "the client's default Namespace (docs/client.md)",
    "OCC_GATEWAY_DIR": "a local gateway's marker variable (docs/reconciliation.md)",
}
"""Variables the documentation may name that are not settings of ``Settings``."""
PRODUCTION = {
    "OCC_ENV": "production",
    "OCC_COMPUTE_DRIVER": "docker",
    "OCC_API_KEY_PEPPER": SAMPLES["api_key_pepper"],
    "OCC_SECRET_KEY": SAMPLES["secret_key"],
    "OCC_AUTH_SECRET": SAMPLES["auth_secret"],
    "OCC_AUTH_BASE_URL": SAMPLES["auth_base_url"],
    "OCC_AUTH_OIDC_DISCOVERY_URL": SAMPLES["auth_oidc_discovery_url"],
    "OCC_AUTH_GITHUB_CLIENT_SECRET": "github-secret",
    "OCC_AUTH_GOOGLE_CLIENT_SECRET": "google-secret",
}
"""Valid production settings: a sample of any one setting is checked among them."""
DOCUMENTS = ["README.md", "CONTRIBUTING.md", "Procfile", "docker-compose.yml", "Dockerfile"]


def _sample(entry: reference.Entry) -> str:
    if entry.key in SAMPLES:
        return SAMPLES[entry.key]
    return "7" if entry.kind in ("integer", "milliseconds") else f"sample-{entry.key}"


def _value(entry: reference.Entry) -> object:
    raw = _sample(entry)
    return int(raw) if entry.kind in ("integer", "milliseconds") else raw


def _documented_entries() -> list[reference.Entry]:
    return [entry for entry in reference.entries() if entry.variable is not None]


def test_every_field_is_documented_once_in_declaration_order() -> None:
    entries = reference.entries()
    assert [entry.key for entry in entries] == list(Settings.model_fields)
    for entry in entries:
        assert entry.description.endswith(".") and "Env:" not in entry.description, entry.key
        assert "``" not in entry.description, "RST literals become Markdown code spans"


@pytest.mark.parametrize("entry", _documented_entries(), ids=lambda entry: entry.key)
def test_the_documented_variable_sets_the_setting(entry: reference.Entry) -> None:
    assert entry.variable is not None
    env = {**PRODUCTION, entry.variable.name: _sample(entry)}
    assert getattr(Settings.from_env(env), entry.key) == _value(entry)


@pytest.mark.parametrize(
    "entry",
    [entry for entry in _documented_entries() if entry.variables.endswith("_FILE`")],
    ids=lambda entry: entry.key,
)
def test_a_documented_file_form_sets_the_setting(entry: reference.Entry, tmp_path: Path) -> None:
    assert entry.variable is not None
    secret = tmp_path / "secret"
    secret.write_text(f"{_sample(entry)}\n")
    env = {**PRODUCTION, f"{entry.variable.name}_FILE": str(secret)}
    env.pop(entry.variable.name, None)
    assert getattr(Settings.from_env(env), entry.key) == _value(entry)


def test_documented_fallbacks_apply_when_the_setting_is_set_nowhere() -> None:
    fallbacks = {
        entry.key: entry.variable.fallback
        for entry in _documented_entries()
        if entry.variable is not None and entry.variable.fallback is not None
    }
    assert fallbacks == {
        "database_url": "DATABASE_URL",
        "broker_url": "REDIS_URL",
        "platform": "DYNO",
    }
    for key, fallback in fallbacks.items():
        entry = next(entry for entry in reference.entries() if entry.key == key)
        assert entry.default.startswith(f"`{fallback}` if set, else ")
        value = SAMPLES.get(key, "redis://fallback.example:6379/0")
        # real keys: on a platform the development ones are refused
        keys = {
            "OCC_ENV": "development",
            "OCC_API_KEY_PEPPER": SAMPLES["api_key_pepper"],
            "OCC_SECRET_KEY": SAMPLES["secret_key"],
        }
        assert getattr(Settings.from_env({fallback: value, **keys}), key) == value


def test_documented_defaults_are_the_defaults() -> None:
    defaults = Settings()
    for entry in reference.entries():
        if entry.variable is not None and entry.variable.required:
            assert entry.default == "required", entry.key
            continue
        value = getattr(defaults, entry.key)
        shown = "unset" if value is None else f"`{value}`"
        assert entry.default.endswith(shown), entry.key


def test_the_readme_table_summarises_each_setting_yaml_only_ones_last() -> None:
    header, *rows = reference.configuration_rows()
    assert header == ("variable", "default", "meaning")
    assert len(rows) == len(Settings.model_fields)
    assert [row[0] for row in rows[-5:]] == [
        "YAML only: `kubernetes_resource_quota`",
        "YAML only: `kubernetes_limit_range`",
        "YAML only: `ssh_hosts`",
        "YAML only: `ssh_gateway_command`",
        "YAML only: `sandbox_egress_allow`",
    ]
    environment = next(row for row in rows if row[0] == "`OCC_ENV`")
    assert environment[1:] == (  # the first sentence, no stop
        "required",
        "`development` or `production`, always said: every process but `occ dev` (which sets"
        " `development`) refuses to start without it",
    )


def test_the_reference_gives_every_key_its_variable_kind_and_description() -> None:
    header, *rows = reference.reference_rows()
    assert header == ("YAML key", "variable", "type", "default", "description")
    by_key = {row[0]: row for row in rows}
    assert by_key["`lease_ms`"][1:3] == ("`OCC_WORKER_LEASE_DURATION_MS`", "milliseconds")
    assert by_key["`secret_key`"][1] == "`OCC_SECRET_KEY` or `OCC_SECRET_KEY_FILE`"
    assert by_key["`kubernetes_limit_range`"][1:3] == ("none", "mapping")


def test_every_variable_the_documentation_names_exists() -> None:
    variables = {entry.variable.name for entry in _documented_entries() if entry.variable}
    known = variables | {f"{name}_FILE" for name in variables} | set(NOT_SETTINGS)
    paths = [ROOT / name for name in DOCUMENTS]
    paths += sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "deploy").rglob("*.yaml"))
    for path in paths:
        for found in re.findall(r"\bOCC_[A-Z0-9_]*\*?", path.read_text(encoding="utf-8")):
            if found.startswith(("OCC_TEST_", "OCC_BENCH_")):  # the test servers' variables
                continue
            if found.endswith("*"):
                assert any(name.startswith(found[:-1]) for name in known), (path.name, found)
            else:
                assert found in known, f"{path.relative_to(ROOT)} names {found}"
