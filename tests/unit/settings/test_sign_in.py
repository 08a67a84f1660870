"""Sign-in settings: the seed's start-up refusals (``AUTH_SECRET_INVALID``,
``AUTH_BASE_URL_INVALID``), half-set providers, and secrets hidden from ``repr``."""

from __future__ import annotations

from pathlib import Path

import pytest

from occ.foundation import errors
from occ.settings.config import Settings
from tests.unit.settings.support import production

SECRET = "a" * 32
OIDC = {
    "OCC_AUTH_OIDC_CLIENT_ID": "occ",
    "OCC_AUTH_OIDC_DISCOVERY_URL": "https://id.example/.well-known/openid-configuration",
}


def _env(**changes: str) -> dict[str, str]:
    return {
        "OCC_ENV": "development",
        "OCC_AUTH_SECRET": SECRET,
        "OCC_AUTH_BASE_URL": "http://127.0.0.1:8000",
        **changes,
    }


def _refused(env: dict[str, str]) -> errors.InvalidSettings:
    with pytest.raises(errors.InvalidSettings) as refused:
        Settings.from_env({"OCC_ENV": "development", **env})
    return refused.value


def test_sign_in_is_off_by_default() -> None:
    assert Settings.from_env({"OCC_ENV": "development"}).sign_in_providers == ()


def test_each_provider_is_on_when_its_client_is_set() -> None:
    settings = Settings.from_env(
        _env(
            **OIDC,
            OCC_AUTH_GITHUB_CLIENT_ID="gh",
            OCC_AUTH_GITHUB_CLIENT_SECRET="gh-secret",
            OCC_AUTH_GOOGLE_CLIENT_ID="gg",
            OCC_AUTH_GOOGLE_CLIENT_SECRET="gg-secret",
        )
    )

    assert settings.sign_in_providers == ("oidc", "github", "google")


@pytest.mark.parametrize("secret", [None, "", "a" * 31])
def test_a_provider_needs_a_secret_of_32_characters(secret: str | None) -> None:
    env = {**_env(**OIDC)}
    if secret is None:
        del env["OCC_AUTH_SECRET"]
    else:
        env["OCC_AUTH_SECRET"] = secret

    refused = _refused(env)

    assert refused.code == "AUTH_SECRET_INVALID"
    assert [e.pointer for e in refused.errors] == ["/auth_secret"]
    assert "a" * 10 not in str(refused)


@pytest.mark.parametrize(
    ("environment", "url"),
    [
        ("development", None),
        ("development", "127.0.0.1:8000"),
        ("development", "ftp://127.0.0.1"),
        ("development", "http://127.0.0.1:8000/console"),
        ("development", "http://occ.example"),
        ("production", "http://occ.example"),
    ],
)
def test_a_provider_needs_a_usable_base_url(environment: str, url: str | None) -> None:
    env = {**_env(**OIDC), "OCC_ENV": environment}
    if url is None:
        del env["OCC_AUTH_BASE_URL"]
    else:
        env["OCC_AUTH_BASE_URL"] = url
    if environment == "production":
        env.update(
            OCC_API_KEY_PEPPER="p" * 40,
            OCC_SECRET_KEY="k" * 40,
            OCC_COMPUTE_DRIVER="kubernetes",
            OCC_KUBERNETES_GATEWAY_IMAGE="registry.example/gateway:1",
        )

    refused = _refused(env)

    assert refused.code == "AUTH_BASE_URL_INVALID"
    assert [e.pointer for e in refused.errors] == ["/auth_base_url"]


def test_production_accepts_https_and_loopback_http() -> None:
    production = {
        "OCC_ENV": "production",
        "OCC_API_KEY_PEPPER": "p" * 40,
        "OCC_SECRET_KEY": "k" * 40,
        "OCC_COMPUTE_DRIVER": "kubernetes",
        "OCC_KUBERNETES_GATEWAY_IMAGE": "registry.example/gateway:1",
    }
    for url in ("https://occ.example", "http://127.0.0.1:8000", "http://localhost"):
        settings = Settings.from_env({**_env(**OIDC), **production, "OCC_AUTH_BASE_URL": url})
        assert settings.auth_base_url == url


@pytest.mark.parametrize(
    ("env", "pointer"),
    [
        ({"OCC_AUTH_OIDC_CLIENT_ID": "occ"}, "/auth_oidc_discovery_url"),
        ({**OIDC, "OCC_AUTH_OIDC_DISCOVERY_URL": "id.example"}, "/auth_oidc_discovery_url"),
        ({"OCC_AUTH_GITHUB_CLIENT_ID": "gh"}, "/auth_github_client_secret"),
        ({"OCC_AUTH_GOOGLE_CLIENT_ID": "gg"}, "/auth_google_client_secret"),
    ],
)
def test_a_half_set_provider_is_refused(env: dict[str, str], pointer: str) -> None:
    refused = _refused(_env(**env))

    assert refused.code == "INVALID_REQUEST"
    assert [e.pointer for e in refused.errors] == [pointer]


def test_secrets_come_from_files_and_never_reach_repr(tmp_path: Path) -> None:
    secret_file = tmp_path / "auth-secret"
    secret_file.write_text("f" * 40)
    client_secret = "client-" + "c" * 30
    env = {
        **_env(**OIDC, OCC_AUTH_OIDC_CLIENT_SECRET=client_secret),
        "OCC_AUTH_SECRET_FILE": str(secret_file),
    }
    del env["OCC_AUTH_SECRET"]

    settings = Settings.from_env(env)

    assert settings.auth_secret == "f" * 40
    assert "f" * 40 not in repr(settings) and client_secret not in repr(settings)


def test_session_timeouts_must_be_positive() -> None:
    refused = _refused({"OCC_ENV": "development", "OCC_AUTH_SESSION_IDLE_MS": "0"})

    assert [e.pointer for e in refused.errors] == ["/auth_session_idle_ms"]


PRODUCTION = production()
NATIVE = {"OCC_AUTH_NATIVE_ADMIN": "on"}


@pytest.mark.parametrize(
    ("provider", "pointer"),
    [
        (OIDC, "/auth_oidc_client_id"),
        (
            {"OCC_AUTH_GITHUB_CLIENT_ID": "gh", "OCC_AUTH_GITHUB_CLIENT_SECRET": "s"},
            "/auth_github_client_id",
        ),
        (
            {"OCC_AUTH_GOOGLE_CLIENT_ID": "gg", "OCC_AUTH_GOOGLE_CLIENT_SECRET": "s"},
            "/auth_google_client_id",
        ),
    ],
)
def test_external_sign_in_is_refused_with_native_admin(
    provider: dict[str, str], pointer: str
) -> None:
    refused = _refused(_env(**provider, **NATIVE))

    assert refused.code == "EXTERNAL_SIGN_IN_NATIVE_ADMIN_UNSUPPORTED"
    assert [e.pointer for e in refused.errors] == [pointer]
    # either alone starts
    assert Settings.from_env(_env(**provider)).sign_in_providers
    assert Settings.from_env(_env(**NATIVE)).auth_native_admin == "on"


def test_native_admin_needs_the_secret_and_base_url_of_sessions() -> None:
    assert _refused({**NATIVE, "OCC_AUTH_BASE_URL": "http://127.0.0.1"}).code == (
        "AUTH_SECRET_INVALID"
    )
    assert _refused({**NATIVE, "OCC_AUTH_SECRET": SECRET}).code == "AUTH_BASE_URL_INVALID"
    refused = _refused(_env(OCC_AUTH_NATIVE_ADMIN="yes"))
    assert (refused.code, [e.pointer for e in refused.errors]) == (
        "INVALID_REQUEST",
        ["/auth_native_admin"],
    )


@pytest.mark.parametrize(
    ("domain", "base_url"),
    [
        ("Example.com", "https://occ.example.com"),
        ("exa_mple.com", "https://occ.example.com"),
        ("com", "https://occ.example.com"),
        ("10.0.0.1", "https://10.0.0.1"),
        ("other.example", "https://occ.example.com"),
        ("ample.com", "https://occ.example.com"),
        ("localhost.localdomain", "http://127.0.0.1:8000"),
    ],
)
def test_a_cookie_domain_that_cannot_work_is_refused(domain: str, base_url: str) -> None:
    env = {**_env(**NATIVE), **PRODUCTION, "OCC_AUTH_BASE_URL": base_url}

    refused = _refused({**env, "OCC_AUTH_COOKIE_DOMAIN": domain})

    assert refused.code == "AUTH_BASE_URL_INVALID"
    assert [e.pointer for e in refused.errors] == ["/auth_cookie_domain"]


def test_a_cookie_domain_is_read_with_native_admin_only_and_covers_the_base_url_host() -> None:
    env = {**_env(), **PRODUCTION, "OCC_AUTH_BASE_URL": "https://occ.example.com"}

    # without native admin the cookie stays host-only whatever the domain says
    assert Settings.from_env({**env, "OCC_AUTH_COOKIE_DOMAIN": "com"}).auth_native_admin == "off"
    for name in ("example.com", "occ.example.com"):
        settings = Settings.from_env({**env, **NATIVE, "OCC_AUTH_COOKIE_DOMAIN": name})
        assert settings.auth_cookie_domain == name
