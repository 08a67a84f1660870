"""The sign-in settings' rules: which providers are set, and whether the secret and the base
URL they need can work.

Checked with the rest of ``Settings`` (so a process refuses them at start-up, before it
connects to anything); the errors carry the seed's codes, ``AUTH_SECRET_INVALID`` and
``AUTH_BASE_URL_INVALID``, and name the setting, never its value.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from typing import Final, Protocol

from occ.foundation import errors

AUTH_SECRET_MIN_CHARS: Final = 32
"""Shortest ``OCC_AUTH_SECRET`` accepted."""

PROVIDERS: Final = ("oidc", "github", "google")
"""Every sign-in provider occ knows, in the order the sign-in page lists them."""


class SignInSettings(Protocol):
    """What the rules read of ``Settings``."""

    @property
    def environment(self) -> str: ...
    @property
    def auth_secret(self) -> str | None: ...
    @property
    def auth_base_url(self) -> str | None: ...
    @property
    def auth_oidc_discovery_url(self) -> str | None: ...
    @property
    def auth_oidc_client_id(self) -> str | None: ...
    @property
    def auth_github_client_id(self) -> str | None: ...
    @property
    def auth_github_client_secret(self) -> str | None: ...
    @property
    def auth_google_client_id(self) -> str | None: ...
    @property
    def auth_google_client_secret(self) -> str | None: ...


def providers(settings: SignInSettings) -> tuple[str, ...]:
    """The providers whose client id is set."""
    set_ids = {
        "oidc": settings.auth_oidc_client_id,
        "github": settings.auth_github_client_id,
        "google": settings.auth_google_client_id,
    }
    return tuple(name for name in PROVIDERS if set_ids[name])


def check(settings: SignInSettings) -> None:
    """Refuse sign-in settings that cannot work together.

    Raises:
        AuthSecretInvalid: a provider is set and the secret is missing or short, or a set
            secret is short.
        AuthBaseUrlInvalid: a provider is set and the base URL is missing or not an origin,
            or not HTTPS (production, non-loopback) or not loopback (development).
        InvalidSettings: a provider is half set (an id without its secret or discovery URL).
    """
    enabled = providers(settings)
    secret = settings.auth_secret
    if (enabled or secret is not None) and len(secret or "") < AUTH_SECRET_MIN_CHARS:
        raise errors.AuthSecretInvalid.at(
            ("auth_secret",), f"must be at least {AUTH_SECRET_MIN_CHARS} characters"
        )
    if enabled or settings.auth_base_url is not None:
        _check_base_url(settings.auth_base_url, settings.environment)
    if settings.auth_oidc_client_id and not settings.auth_oidc_discovery_url:
        raise errors.InvalidSettings.at(
            ("auth_oidc_discovery_url",), "must be set with the OIDC client id"
        )
    if settings.auth_oidc_discovery_url and not _is_http_url(settings.auth_oidc_discovery_url):
        raise errors.InvalidSettings.at(
            ("auth_oidc_discovery_url",), "must be an absolute http(s) URL"
        )
    for name in ("github", "google"):
        client_id = getattr(settings, f"auth_{name}_client_id")
        if client_id and not getattr(settings, f"auth_{name}_client_secret"):
            raise errors.InvalidSettings.at(
                (f"auth_{name}_client_secret",), f"must be set with the {name} client id"
            )


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (``localhost`` or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_base_url(url: str | None, environment: str) -> None:
    where = ("auth_base_url",)
    if url is None or not _is_http_url(url):
        raise errors.AuthBaseUrlInvalid.at(where, "must be an absolute http(s) origin")
    parsed = urllib.parse.urlsplit(url)
    if parsed.path not in ("", "/") or parsed.query or parsed.fragment or parsed.username:
        raise errors.AuthBaseUrlInvalid.at(
            where, "must be an origin: scheme, host and port, no path"
        )
    host = parsed.hostname or ""
    if environment == "production" and parsed.scheme != "https" and not is_loopback(host):
        raise errors.AuthBaseUrlInvalid.at(where, "must be https in production")
    if environment == "development" and not is_loopback(host):
        raise errors.AuthBaseUrlInvalid.at(where, "must be a loopback host in development")


def _is_http_url(url: str) -> bool:
    try:
        parsed = urllib.parse.urlsplit(url)
    except ValueError:
        return False
    return parsed.scheme in ("http", "https") and bool(parsed.hostname)
