"""Settings: credentials masked in ``repr``, production refusals and start-up warnings."""

from __future__ import annotations

import pytest

from occ import errors
from occ.config import Settings, mask_url_password

PEPPER = "pepper-" + "p" * 40
SECRET_KEY = "secret-key-" + "k" * 40
DB_PASSWORD = "db-pa55word"
BROKER_PASSWORD = "broker-pa55word"


def _production(**changes: object) -> dict[str, str]:
    env = {
        "OCC_ENV": "production",
        "OCC_DATABASE_URL": f"postgresql+psycopg://occ_app:{DB_PASSWORD}@db.example:5432/occ",
        "OCC_BROKER_URL": f"rediss://:{BROKER_PASSWORD}@redis.example:6380/0",
        "OCC_API_KEY_PEPPER": PEPPER,
        "OCC_SECRET_KEY": SECRET_KEY,
        "OCC_COMPUTE_DRIVER": "kubernetes",
        "OCC_KUBERNETES_GATEWAY_IMAGE": "registry.example/gateway:1",
    }
    env.update({key: str(value) for key, value in changes.items()})
    return env


def _refusal(env: dict[str, str]) -> errors.InvalidInput:
    with pytest.raises(errors.InvalidInput) as refused:
        Settings.from_env(env)
    return refused.value


def test_repr_masks_every_credential() -> None:
    settings = Settings.from_env(
        _production(OCC_MIGRATION_DATABASE_URL=f"postgresql://owner:{DB_PASSWORD}x@db.example/occ")
    )
    shown = repr(settings)
    for secret in (DB_PASSWORD, BROKER_PASSWORD, PEPPER, SECRET_KEY):
        assert secret not in shown
    assert "postgresql+psycopg://occ_app:***@db.example:5432/occ" in shown
    assert "postgresql://owner:***@db.example/occ" in shown
    assert "rediss://:***@redis.example:6380/0" in shown
    assert "api_key_pepper='***'" in shown and "secret_key='***'" in shown
    assert str(settings) == shown
    assert "lease_ms=15000" in shown  # everything else is still shown


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://u:p@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),
        ("redis://:p@h:6379/0", "redis://:***@h:6379/0"),
        ("redis://h:6379/0", "redis://h:6379/0"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("filesystem://", "filesystem://"),
        ("not a url", "not a url"),
    ],
)
def test_mask_url_password(url: str, masked: str) -> None:
    assert mask_url_password(url) == masked


def test_production_accepts_good_settings_without_warnings() -> None:
    settings = Settings.from_env(_production())
    assert settings.startup_warnings() == ()


def test_production_refuses_the_local_driver() -> None:
    refused = _refusal(_production(OCC_COMPUTE_DRIVER="local"))
    assert [field.pointer for field in refused.errors] == ["/compute_driver"]
    assert "development only" in refused.errors[0].message


@pytest.mark.parametrize(
    ("variable", "field"),
    [("OCC_API_KEY_PEPPER", "/api_key_pepper"), ("OCC_SECRET_KEY", "/secret_key")],
)
def test_production_refuses_short_keys_naming_the_setting(variable: str, field: str) -> None:
    short = "x" * 31
    refused = _refusal(_production(**{variable: short}))
    assert [error.pointer for error in refused.errors] == [field]
    assert "at least 32 bytes" in refused.errors[0].message
    assert short not in str(refused.errors) and short not in refused.detail
    Settings.from_env(_production(**{variable: "x" * 32}))  # 32 bytes is enough


def test_development_accepts_short_keys_and_the_local_driver() -> None:
    settings = Settings.from_env(
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
    settings = Settings.from_env(_production(**{variable: url}))  # a warning, not an error
    [warning] = settings.startup_warnings()
    assert warning.pointer == field
    assert "no password" in warning.message and url not in warning.message


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://occ_app@/occ?host=/var/run/postgresql",  # peer authentication
        "postgresql:///occ",
    ],
)
def test_a_unix_socket_database_url_needs_no_password(url: str) -> None:
    assert Settings.from_env(_production(OCC_DATABASE_URL=url)).startup_warnings() == ()


def test_a_broker_other_than_redis_is_not_warned_about() -> None:
    settings = Settings.from_env(_production(OCC_BROKER_URL="filesystem://"))
    assert settings.startup_warnings() == ()


def test_log_level_defaults_to_info() -> None:
    assert Settings.from_env({}).log_level == "INFO"


@pytest.mark.parametrize("raw", ["debug", "Warning", "CRITICAL"])
def test_log_level_is_case_insensitive_and_stored_upper_case(raw: str) -> None:
    assert Settings.from_env({"OCC_LOG_LEVEL": raw}).log_level == raw.upper()


def test_log_level_refuses_an_unknown_level() -> None:
    refused = _refusal({"OCC_LOG_LEVEL": "verbose"})
    assert [error.pointer for error in refused.errors] == ["/log_level"]
    assert "DEBUG" in refused.errors[0].message
