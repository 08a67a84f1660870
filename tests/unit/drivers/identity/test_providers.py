"""The providers the settings configure: OIDC by discovery URL, the Google and GitHub presets,
and who a GitHub-style user object names."""

from __future__ import annotations

import pytest

from occ.drivers.identity import oidc, providers
from occ.foundation import errors
from occ.settings.config import Settings

BASE = {"auth_secret": "a" * 32, "auth_base_url": "http://127.0.0.1:8000"}


def test_each_configured_provider_is_built_with_its_endpoints() -> None:
    settings = Settings(
        **BASE,
        auth_oidc_client_id="occ",
        auth_oidc_discovery_url="https://id.example/.well-known/openid-configuration",
        auth_github_client_id="gh",
        auth_github_client_secret="gh-secret",
        auth_google_client_id="gg",
        auth_google_client_secret="gg-secret",
    )

    oidc_provider, github, google = providers.configured(settings)

    assert oidc_provider.discovery_url == settings.auth_oidc_discovery_url
    assert oidc_provider.client_secret is None and "openid" in oidc_provider.scope.split()
    assert github.endpoints == providers.GITHUB_ENDPOINTS and github.discovery_url is None
    assert google.discovery_url == providers.GOOGLE_DISCOVERY_URL
    assert "gh-secret" not in repr(github) and "gg-secret" not in repr(google)


def test_no_provider_is_configured_by_default() -> None:
    assert providers.configured(Settings()) == ()


def _github_client() -> oidc.Client:
    """A client of the GitHub preset, configured with its id and secret only."""
    github = providers.configured(
        Settings(**BASE, auth_github_client_id="gh", auth_github_client_secret="gh-secret")
    )[0]
    return oidc.Client(github, redirect_uri="http://127.0.0.1:8000/auth/callback/github")


def test_the_authorization_url_carries_pkce_state_and_the_redirect() -> None:
    client = _github_client()

    url, pending = client.begin()

    assert url.startswith(providers.GITHUB_AUTHORIZATION_URL + "?")
    assert f"state={pending.state}" in url and "code_challenge_method=S256" in url
    assert "code_challenge=" in url and pending.verifier not in url
    assert "gh-secret" not in url
    _, again = client.begin()
    assert again.state != pending.state and again.verifier != pending.verifier


def test_a_callback_with_another_state_is_refused_before_any_request() -> None:
    client = _github_client()
    _, pending = client.begin()

    with pytest.raises(errors.Unauthenticated):
        client.finish(pending, state="forged", code="code")


def test_a_github_user_is_its_numeric_id_never_its_login() -> None:
    identity = oidc.identity_from_user(
        providers.GITHUB_ISSUER, {"id": 42, "login": "octo", "name": "Octo Cat"}
    )

    assert identity == oidc.Identity(
        issuer="https://github.com", subject="42", display_name="Octo Cat"
    )
    unnamed = oidc.identity_from_user(providers.GITHUB_ISSUER, {"id": 7, "login": "x"})
    assert unnamed.display_name == "x"


@pytest.mark.parametrize("user", [{}, {"id": "42"}, {"login": "octo"}, ["id", 1]])
def test_a_user_without_a_numeric_id_is_refused(user: object) -> None:
    with pytest.raises(errors.Unauthenticated):
        oidc.identity_from_user(providers.GITHUB_ISSUER, user)
