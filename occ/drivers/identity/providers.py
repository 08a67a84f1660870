"""The sign-in providers the settings configure: any OpenID Connect issuer by its discovery
URL, Google (an OpenID Connect issuer with a known discovery URL) and GitHub (OAuth 2.0 with its
user API standing in for an ID token).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from occ.settings.config import Settings

GOOGLE_DISCOVERY_URL: Final = "https://accounts.google.com/.well-known/openid-configuration"
GITHUB_ISSUER: Final = "https://github.com"
GITHUB_AUTHORIZATION_URL: Final = "https://github.com/login/oauth/authorize"
GITHUB_TOKEN_URL: Final = "https://github.com/login/oauth/access_token"  # noqa: S105
GITHUB_USER_URL: Final = "https://api.github.com/user"
OPENID_SCOPE: Final = "openid profile email"


@dataclass(frozen=True, kw_only=True)
class OAuthEndpoints:
    """A provider without discovery: where to send the person, trade the code, and read who
    signed in (the user's numeric ``id`` is the subject)."""

    issuer: str
    authorization_url: str
    token_url: str
    user_url: str


@dataclass(frozen=True, kw_only=True)
class Provider:
    """One configured provider: ``name`` is its path segment (``/auth/sign-in/<name>``)."""

    name: str
    label: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    scope: str
    discovery_url: str | None = None
    """An OpenID Connect issuer's discovery document (``None`` for plain OAuth 2.0)."""
    endpoints: OAuthEndpoints | None = None
    """A plain OAuth 2.0 provider's endpoints (``None`` for OpenID Connect)."""


GITHUB_ENDPOINTS: Final = OAuthEndpoints(
    issuer=GITHUB_ISSUER,
    authorization_url=GITHUB_AUTHORIZATION_URL,
    token_url=GITHUB_TOKEN_URL,
    user_url=GITHUB_USER_URL,
)


def configured(settings: Settings) -> tuple[Provider, ...]:
    """The providers whose client id is set, in the order the sign-in page lists them."""
    found: list[Provider] = []
    if settings.auth_oidc_client_id and settings.auth_oidc_discovery_url:
        found.append(
            _openid_connect(
                "oidc",
                "Single sign-on",
                settings.auth_oidc_client_id,
                settings.auth_oidc_client_secret,
                settings.auth_oidc_discovery_url,
            )
        )
    if settings.auth_github_client_id:
        found.append(
            Provider(
                name="github",
                label="GitHub",
                client_id=settings.auth_github_client_id,
                client_secret=settings.auth_github_client_secret,
                scope="read:user",
                endpoints=GITHUB_ENDPOINTS,
            )
        )
    if settings.auth_google_client_id:
        found.append(
            _openid_connect(
                "google",
                "Google",
                settings.auth_google_client_id,
                settings.auth_google_client_secret,
                GOOGLE_DISCOVERY_URL,
            )
        )
    return tuple(found)


def _openid_connect(
    name: str, label: str, client_id: str, client_secret: str | None, discovery_url: str
) -> Provider:
    """An OpenID Connect issuer found by its discovery document, asked for the standard
    profile claims."""
    return Provider(
        name=name,
        label=label,
        client_id=client_id,
        client_secret=client_secret,
        scope=OPENID_SCOPE,
        discovery_url=discovery_url,
    )
