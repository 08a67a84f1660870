"""Settings: credentials masked in ``repr``, production refusals, start-up warnings, typed
values from the environment and the YAML file, secret files and conventional URLs."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from occ.foundation import errors
from occ.settings import sources as settings_sources
from occ.settings.config import Settings
from tests.unit.settings.support import (
    BROKER_PASSWORD,
    DB_PASSWORD,
    PEPPER,
    SECRET_KEY,
    from_env,
    production,
    refusal,
    yaml_file,
)


def test_repr_masks_every_credential() -> None:
    settings = from_env(
        production(OCC_MIGRATION_DATABASE_URL=f"postgresql://owner:{DB_PASSWORD}x@db.example/occ")
    )
    shown = repr(settings)
    for secret in (DB_PASSWORD, BROKER_PASSWORD, PEPPER, SECRET_KEY):
        assert secret not in shown
    assert "postgresql+psycopg://occ_app:***@db.example:5432/occ" in shown
    assert "postgresql+psycopg://owner:***@db.example/occ" in shown  # normalised, then masked
    assert "rediss://:***@redis.example:6380/0" in shown
    assert "api_key_pepper='***'" in shown and "secret_key='***'" in shown
    assert str(settings) == shown
    assert "lease_ms=15000" in shown  # everything else is still shown


def test_production_accepts_good_settings_without_warnings() -> None:
    settings = from_env(production())
    assert settings.startup_warnings() == ()


def test_production_refuses_the_local_driver() -> None:
    refused = refusal(production(OCC_COMPUTE_DRIVER="local"))
    assert [field.pointer for field in refused.errors] == ["/compute_driver"]
    assert "development only" in refused.errors[0].message


@pytest.mark.parametrize(
    ("variable", "field"),
    [("OCC_API_KEY_PEPPER", "/api_key_pepper"), ("OCC_SECRET_KEY", "/secret_key")],
)
def test_production_refuses_short_keys_naming_the_setting(variable: str, field: str) -> None:
    short = "x" * 31
    refused = refusal(production(**{variable: short}))
    assert [error.pointer for error in refused.errors] == [field]
    assert "at least 32 bytes" in refused.errors[0].message
    assert short not in str(refused.errors) and short not in refused.detail
    from_env(production(**{variable: "x" * 32}))  # 32 bytes is enough


def test_development_accepts_short_keys_and_the_local_driver() -> None:
    settings = from_env(
        {"OCC_API_KEY_PEPPER": "short", "OCC_SECRET_KEY": "short", "OCC_COMPUTE_DRIVER": "local"}
    )
    assert settings.compute_driver == "local"
    assert settings.startup_warnings() == ()  # warnings are for production


@pytest.mark.parametrize(
    ("variable", "url", "field"),
    [
        ("OCC_DATABASE_URL", "postgresql+psycopg://occ_app@db.example/occ", "/database_url"),
        (
            "OCC_MIGRATION_DATABASE_URL",
            "postgresql://owner@db.example/occ",
            "/migration_database_url",
        ),
        ("OCC_BROKER_URL", "redis://redis.example:6379/0", "/broker_url"),
        ("OCC_BROKER_URL", "rediss://user:@redis.example:6380/0", "/broker_url"),
    ],
)
def test_production_warns_about_a_url_without_a_password(
    variable: str, url: str, field: str
) -> None:
    settings = from_env(production(**{variable: url}))  # a warning, not an error
    [warning] = settings.startup_warnings()
    assert warning.pointer == field
    assert "no password" in warning.message and url not in warning.message


# -- types, wherever a value comes from ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("lease_ms: soon\n", "/lease_ms"),
        ("max_attempts: true\n", "/max_attempts"),  # a boolean is not a number
        ("lease_ms: '15000'\n", "/lease_ms"),  # nor is a quoted one in YAML
        ("database_url: 5432\n", "/database_url"),
        ("kubernetes_resource_quota:\n  pods: 20\n", "/kubernetes_resource_quota/pods"),
        ("kubernetes_limit_range: [cpu]\n", "/kubernetes_limit_range"),
    ],
)
def test_a_wrong_type_in_the_yaml_file_names_the_key(
    tmp_path: Path, text: str, pointer: str
) -> None:
    refused = refusal(yaml_file(tmp_path, text))
    assert [error.pointer for error in refused.errors] == [pointer]
    assert "valid" in refused.errors[0].message
    assert pointer in refused.detail


def test_the_yaml_file_is_typed_and_the_environment_overrides_it(tmp_path: Path) -> None:
    env = yaml_file(tmp_path, "lease_ms: 20000\nmax_attempts: 3\nlog_level: debug\n")
    settings = from_env({**env, "OCC_WORKER_MAX_ATTEMPTS": "7"})
    assert (settings.lease_ms, settings.max_attempts, settings.log_level) == (20000, 7, "DEBUG")


def test_an_unknown_yaml_key_is_refused(tmp_path: Path) -> None:
    refused = refusal(yaml_file(tmp_path, "lease_ms: 20000\nlease_seconds: 20\n"))
    assert [(e.pointer, e.message) for e in refused.errors] == [
        ("/lease_seconds", "unknown setting")
    ]


@pytest.mark.parametrize("raw", ["soon", "-5", "1.5", " 7", "1_000"])
def test_an_environment_type_error_names_the_variable(raw: str) -> None:
    refused = refusal({"OCC_METRICS_PORT": raw})
    assert [error.pointer for error in refused.errors] == ["/OCC_METRICS_PORT"]
    assert raw.strip() not in refused.detail


def test_direct_construction_is_typed_frozen_and_reads_no_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OCC_WORKER_LEASE_DURATION_MS", "1")
    settings = Settings(max_attempts=2)
    assert (settings.lease_ms, settings.max_attempts) == (15_000, 2)
    with pytest.raises(errors.InvalidInput) as refused:
        Settings(max_attempts="2")
    assert [error.pointer for error in refused.value.errors] == ["/max_attempts"]
    with pytest.raises(errors.InvalidInput) as unknown:
        Settings(max_attempt=2)
    assert [error.pointer for error in unknown.value.errors] == ["/max_attempt"]
    with pytest.raises(pydantic.ValidationError):
        settings.lease_ms = 5


def test_replace_checks_the_copy() -> None:
    settings = Settings()
    assert settings.replace(lease_ms=5).lease_ms == 5 and settings.lease_ms == 15_000
    with pytest.raises(errors.InvalidInput) as refused:
        settings.replace(lease_ms=0)
    assert [error.pointer for error in refused.value.errors] == ["/lease_ms"]


# -- secrets in files ------------------------------------------------------------------------

SECRET_VARIABLES = [
    ("OCC_API_KEY_PEPPER", "api_key_pepper", PEPPER, PEPPER),
    ("OCC_SECRET_KEY", "secret_key", SECRET_KEY, SECRET_KEY),
    (
        "OCC_DATABASE_URL",
        "database_url",
        f"postgresql+psycopg://occ_app:{DB_PASSWORD}@db.example/occ",
        f"postgresql+psycopg://occ_app:{DB_PASSWORD}@db.example/occ",
    ),
    (
        "OCC_MIGRATION_DATABASE_URL",
        "migration_database_url",
        f"postgres://owner:{DB_PASSWORD}@db.example/occ",
        f"postgresql+psycopg://owner:{DB_PASSWORD}@db.example/occ",
    ),
    (
        "OCC_BROKER_URL",
        "broker_url",
        f"rediss://:{BROKER_PASSWORD}@redis.example:6380/0",
        f"rediss://:{BROKER_PASSWORD}@redis.example:6380/0",
    ),
]


@pytest.mark.parametrize(("variable", "name", "content", "value"), SECRET_VARIABLES)
def test_a_secret_can_be_read_from_the_file_its_file_variable_names(
    tmp_path: Path, variable: str, name: str, content: str, value: str
) -> None:
    path = tmp_path / "secret"
    path.write_text(content + "\n")
    env = production(**{f"{variable}_FILE": path})
    env.pop(variable, None)
    settings = from_env(env)
    assert getattr(settings, name) == value  # the trailing newline is not part of it
    assert content not in repr(settings)


@pytest.mark.parametrize(("variable", "name", "content", "value"), SECRET_VARIABLES)
def test_a_secret_and_its_file_variable_together_are_refused_naming_both(
    tmp_path: Path, variable: str, name: str, content: str, value: str
) -> None:
    path = tmp_path / "secret"
    path.write_text(content)
    refused = refusal(production(**{variable: content, f"{variable}_FILE": path}))
    assert [error.pointer for error in refused.errors] == [f"/{variable}"]
    assert f"{variable}_FILE" in refused.errors[0].message
    assert content not in refused.detail


@pytest.mark.parametrize("problem", ["missing", "directory", "empty", "not text"])
def test_an_unusable_secret_file_names_the_variable_never_the_content(
    tmp_path: Path, problem: str
) -> None:
    path = tmp_path / "secret"
    if problem == "directory":
        path.mkdir()
    elif problem == "empty":
        path.write_text("\n")
    elif problem == "not text":
        path.write_bytes(b"\xff\xfe" + SECRET_KEY.encode())
    refused = refusal({"OCC_SECRET_KEY_FILE": str(path)})
    assert [error.pointer for error in refused.errors] == ["/OCC_SECRET_KEY_FILE"]
    assert SECRET_KEY not in refused.detail


def test_a_file_variable_of_a_setting_that_is_no_secret_is_ignored(tmp_path: Path) -> None:
    env = {"OCC_ENV": "development", "OCC_ENV_FILE": str(tmp_path / "none")}
    assert from_env(env).environment == "development"


@pytest.mark.parametrize("env", [{}, {"OCC_ENV": ""}, {"OCC_ENV_FILE": "/dev/null"}])
def test_an_unset_environment_is_refused_from_the_environment_only(env: dict[str, str]) -> None:
    with pytest.raises(errors.EnvironmentNotSet) as refused:
        Settings.from_env({**env, "OCC_LOG_LEVEL": "debug"})
    assert refused.value.code == "ENVIRONMENT_NOT_SET"
    assert [error.pointer for error in refused.value.errors] == ["/OCC_ENV"]
    assert Settings().environment == "development"  # settings built in code need not say
    assert "environment" not in Settings.from_env(env, require=False).model_fields_set


def test_the_yaml_file_may_set_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "settings.yaml"
    path.write_text("environment: development\n")
    assert Settings.from_env({"OCC_CONFIG_PATH": str(path)}).environment == "development"


def test_a_settings_file_that_is_not_yaml_is_refused_without_its_line(tmp_path: Path) -> None:
    secret = "@Zq9-not-yaml-" + "k" * 32  # a generated key may start with a YAML indicator
    refused = refusal(yaml_file(tmp_path, f"environment: development\nsecret_key: {secret}\n"))
    [error] = refused.errors
    assert error.pointer == "/OCC_CONFIG_PATH"
    assert "line 2, column 13" in error.message
    assert "Zq9" not in str(refused) + error.message


# -- conventional URLs and drivers -----------------------------------------------------------


def test_database_url_and_redis_url_are_fallbacks(tmp_path: Path) -> None:
    conventional = {
        "DATABASE_URL": f"postgres://u:{DB_PASSWORD}@heroku.example:5432/d1",
        "REDIS_URL": f"rediss://:{BROKER_PASSWORD}@heroku.example:6380",
    }
    settings = from_env(conventional)
    assert settings.database_url == f"postgresql+psycopg://u:{DB_PASSWORD}@heroku.example:5432/d1"
    assert settings.broker_url == conventional["REDIS_URL"]
    assert DB_PASSWORD not in repr(settings) and BROKER_PASSWORD not in repr(settings)
    own = {
        "OCC_DATABASE_URL": "postgresql+psycopg://occ@own.example/occ",
        "OCC_BROKER_URL": "redis://own.example:6379/0",
    }
    settings = from_env({**conventional, **own})
    assert (settings.database_url, settings.broker_url) == tuple(own.values())
    text = "database_url: postgresql://occ@yaml.example/occ\nbroker_url: redis://yaml.example\n"
    settings = from_env({**conventional, **yaml_file(tmp_path, text)})
    assert settings.database_url == "postgresql+psycopg://occ@yaml.example/occ"
    assert settings.broker_url == "redis://yaml.example"


def test_a_bad_fallback_names_the_conventional_variable() -> None:
    refused = refusal({"DATABASE_URL": "mysql://u@h/d"})
    assert [error.pointer for error in refused.errors] == ["/database_url"]


def test_every_setting_but_the_yaml_only_ones_has_a_variable_of_its_own() -> None:
    declared = settings_sources.variables(Settings)
    yaml_only = set(Settings.model_fields) - set(declared)
    assert yaml_only == {
        "kubernetes_allowed_callers",
        "kubernetes_resource_quota",
        "kubernetes_limit_range",
        "sandbox_egress_allow",
        "ssh_hosts",
        "ssh_gateway_command",
    }
    names = [variable.name for variable in declared.values()]
    assert len(set(names)) == len(names)
    assert all(name.startswith("OCC_") for name in names)


def test_only_the_secrets_may_come_from_files() -> None:
    with_files = {name for name, v in settings_sources.variables(Settings).items() if v.file}
    assert with_files == {
        "database_url",
        "migration_database_url",
        "broker_url",
        "api_key_pepper",
        "secret_key",
        "fingerprint_key",
        "rate_limit_storage_url",
        "auth_secret",
        "auth_oidc_client_secret",
        "auth_github_client_secret",
        "auth_google_client_secret",
    }


def test_a_platform_refuses_the_development_keys_whatever_occ_env_says() -> None:
    with pytest.raises(errors.InvalidSettings) as refused:
        from_env({"DYNO": "web.1", "OCC_ENV": "development"})
    assert refused.value.errors[0].pointer == "/api_key_pepper"
    assert "hosting platform" in refused.value.errors[0].message
    with pytest.raises(errors.InvalidSettings) as secret:
        from_env({"DYNO": "web.1", "OCC_API_KEY_PEPPER": "p" * 40})
    assert secret.value.errors[0].pointer == "/secret_key"
    chosen = from_env({"DYNO": "web.1", "OCC_API_KEY_PEPPER": "p" * 40, "OCC_SECRET_KEY": "s" * 40})
    assert chosen.platform == "web.1" and chosen.environment == "development"
    assert from_env({}).platform is None
