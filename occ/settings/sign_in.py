"""The sign-in settings' rules: which providers are set, and whether the secret and the base
URL they need can work.

Checked with the rest of ``Settings`` (so a process refuses them at start-up, before it
connects to anything); the errors carry the seed's codes, ``AUTH_SECRET_INVALID`` and
``AUTH_BASE_URL_INVALID``, and name the setting, never its value.
"""

from __future__ import annotations

import ipaddress
import re
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
    def auth_native_admin(self) -> str: ...
    @property
    def auth_cookie_domain(self) -> str | None: ...
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
        ExternalSignInNativeAdminUnsupported: native admin is on and a provider is set.
        InvalidSettings: a provider is half set (an id without its secret or discovery URL).
    """
    enabled = providers(settings)
    _check_native_admin(settings, enabled)
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


NATIVE_ADMIN_VALUES: Final = ("off", "on")
"""Values of ``auth_native_admin``."""
_LABEL: Final = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def native_admin(settings: SignInSettings) -> bool:
    """Whether native admin sign-in is on."""
    return settings.auth_native_admin == "on"


def _check_native_admin(settings: SignInSettings, enabled: tuple[str, ...]) -> None:
    if settings.auth_native_admin not in NATIVE_ADMIN_VALUES:
        raise errors.InvalidSettings.at(("auth_native_admin",), "must be off or on")
    if not native_admin(settings):
        return  # the cookie domain is read only with native admin
    if enabled:
        raise errors.ExternalSignInNativeAdminUnsupported.at(
            (f"auth_{enabled[0]}_client_id",),
            "GitHub, Google and OIDC sign-in support host-only cookies only: turn native admin"
            " off (OCC_AUTH_NATIVE_ADMIN=off) or unset the provider",
        )
    if len(settings.auth_secret or "") < AUTH_SECRET_MIN_CHARS:
        raise errors.AuthSecretInvalid.at(
            ("auth_secret",), f"native admin needs at least {AUTH_SECRET_MIN_CHARS} characters"
        )
    _check_base_url(settings.auth_base_url, settings.environment)
    if settings.auth_cookie_domain is not None:
        _check_cookie_domain(settings.auth_cookie_domain, settings.auth_base_url or "")


def _check_cookie_domain(domain: str, base_url: str) -> None:
    where = ("auth_cookie_domain",)
    labels = domain.split(".")
    if domain != domain.lower() or not all(_LABEL.fullmatch(label) for label in labels):
        raise errors.AuthBaseUrlInvalid.at(where, "must be a lowercase DNS name")
    if len(labels) < 2 or _is_address(domain):
        raise errors.AuthBaseUrlInvalid.at(where, "must not be a top-level domain or an address")
    parsed = urllib.parse.urlsplit(base_url)
    host = parsed.hostname or ""
    if host != domain and not host.endswith(f".{domain}"):
        raise errors.AuthBaseUrlInvalid.at(where, "must contain the host of OCC_AUTH_BASE_URL")
    if parsed.scheme != "https":
        raise errors.AuthBaseUrlInvalid.at(where, "needs an https OCC_AUTH_BASE_URL")


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


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
