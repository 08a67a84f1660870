"""The platform settings: URL passwords masked and warned about, PostgreSQL URLs normalised."""

from __future__ import annotations

import pytest

from occ.settings.config import Settings
from occ.settings.platform import mask_url_password
from tests.unit.settings.support import from_env, production, refusal


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


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("postgres://u:p@h:5432/d", "postgresql+psycopg://u:p@h:5432/d"),
        ("postgresql://u@h/d?sslmode=require", "postgresql+psycopg://u@h/d?sslmode=require"),
        ("POSTGRES://u@h/d", "postgresql+psycopg://u@h/d"),
        ("postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d"),
    ],
)
def test_postgresql_urls_are_normalised_to_the_psycopg_driver(url: str, normalised: str) -> None:
    settings = from_env({"OCC_DATABASE_URL": url, "OCC_MIGRATION_DATABASE_URL": url})
    assert settings.database_url == settings.migration_database_url == normalised
    assert Settings(database_url=url).database_url == normalised


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://occ_app@/occ?host=/var/run/postgresql",  # peer authentication
        "postgresql:///occ",
    ],
)
def test_a_unix_socket_database_url_needs_no_password(url: str) -> None:
    assert from_env(production(OCC_DATABASE_URL=url)).startup_warnings() == ()


def test_a_broker_other_than_redis_is_not_warned_about() -> None:
    settings = from_env(production(OCC_BROKER_URL="filesystem://"))
    assert settings.startup_warnings() == ()


@pytest.mark.parametrize(
    ("variable", "setting", "url"),
    [
        ("OCC_BROKER_URL", "broker_url", "redis://:Pw9-slash/tail-sEcReT@redis.example:6379/0"),
        ("OCC_DATABASE_URL", "database_url", "postgresql://occ:Pw9@at-tail-sEcReT@db.example/occ"),
        (
            "OCC_MIGRATION_DATABASE_URL",
            "migration_database_url",
            "postgres://o:Pw9#tail-sEcReT@d/o",
        ),
        ("OCC_BROKER_URL", "broker_url", "redis://:Pw9?tail-sEcReT@redis.example:6379/0"),
    ],
)
def test_a_url_whose_password_is_not_percent_encoded_is_refused_unshown(
    variable: str, setting: str, url: str
) -> None:
    refused = refusal(production(**{variable: url}))
    [error] = refused.errors
    assert error.pointer == f"/{setting}"
    assert "percent-encoded" in error.message
    assert "sEcReT" not in str(refused) + error.message


def test_a_percent_encoded_password_with_reserved_characters_is_taken() -> None:
    url = "rediss://:Pw9%2Fslash%40at@redis.example:6380/0"
    assert from_env(production(OCC_BROKER_URL=url)).broker_url == url
