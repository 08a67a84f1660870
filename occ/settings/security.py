"""The keys of an installation and the sign-in settings: the API-key pepper, the secret key,
the fingerprint key, the user-session secret and the identity providers."""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated, Final

import pydantic

from occ.foundation import errors
from occ.settings.sources import Variable
from occ.settings.topic import Topic, require_positive

PRODUCTION_KEY_MIN_BYTES = 32
"""Shortest API-key pepper and secret key a production process accepts."""
HIDDEN: Final = frozenset(
    {
        "api_key_pepper",
        "secret_key",
        "fingerprint_key",
        "auth_secret",
        "auth_oidc_client_secret",
        "auth_github_client_secret",
        "auth_google_client_secret",
    }
)
"""The settings that are secrets: a dump of the settings shows ``***`` in their place."""


class Security(Topic):
    """The keys and the sign-in settings."""

    api_key_pepper: Annotated[str, Variable("OCC_API_KEY_PEPPER", file=True)] = "development-pepper"
    """Server secret keying API-key hashes; set it in production. A new pepper invalidates
    every API key."""

    secret_key: Annotated[str, Variable("OCC_SECRET_KEY", file=True)] = pydantic.Field(
        default="development-secret-key"
    )
    """Key protecting stored Secret values; set it in production."""

    fingerprint_key: Annotated[str | None, Variable("OCC_FINGERPRINT_KEY", file=True)] = None
    """Key of the credential fingerprints occ shows (a gateway's ``/healthz``, a Kubernetes
    annotation): an HMAC, never a plain hash (unset: derived from ``OCC_SECRET_KEY``). Set a
    new one to rotate: every fingerprint changes, annotations at the next observation, a
    gateway's at its next start."""

    auth_secret: Annotated[str | None, Variable("OCC_AUTH_SECRET", file=True)] = None
    """Server secret keying user-session hashes, CSRF tokens and the sign-in state cookie; at
    least 32 characters. Required when a sign-in provider is set (unset: no user sessions).
    A new secret signs every user out."""

    auth_base_url: Annotated[str | None, Variable("OCC_AUTH_BASE_URL")] = None
    """The API's public origin (``https://occ.example.com``), which providers redirect back
    to and which decides the session cookie's ``Secure`` flag. Required when a sign-in
    provider is set; in production HTTPS unless the host is loopback, in development a
    loopback host (unset: no user sessions)."""

    auth_native_admin: Annotated[str, Variable("OCC_AUTH_NATIVE_ADMIN")] = "off"
    """``on``: native admin sign-in, occ signing its administrators in itself with one-time
    sign-in links (no identity provider), whose session cookie may cover the Installation's
    subdomains (``OCC_AUTH_COOKIE_DOMAIN``). Refused with a GitHub, Google or OIDC provider,
    which support host-only cookies only (``EXTERNAL_SIGN_IN_NATIVE_ADMIN_UNSUPPORTED``)."""

    auth_cookie_domain: Annotated[str | None, Variable("OCC_AUTH_COOKIE_DOMAIN")] = None
    """With native admin: the session cookie's ``Domain`` (``occ.example.com`` sends it to its
    subdomains too); it must contain the base URL's host and needs an https base URL (unset,
    or native admin off: host-only)."""

    auth_oidc_discovery_url: Annotated[str | None, Variable("OCC_AUTH_OIDC_DISCOVERY_URL")] = None
    """OpenID Connect discovery document of a company issuer
    (``https://id.example.com/.well-known/openid-configuration``; unset: no OIDC sign-in)."""

    auth_oidc_client_id: Annotated[str | None, Variable("OCC_AUTH_OIDC_CLIENT_ID")] = None
    """Client id occ is registered with at the OIDC issuer (unset: no OIDC sign-in)."""

    auth_oidc_client_secret: Annotated[
        str | None, Variable("OCC_AUTH_OIDC_CLIENT_SECRET", file=True)
    ] = None
    """Client secret of the OIDC registration (unset: a public client, PKCE only)."""

    auth_github_client_id: Annotated[str | None, Variable("OCC_AUTH_GITHUB_CLIENT_ID")] = None
    """Client id of occ's GitHub OAuth app (unset: no GitHub sign-in)."""

    auth_github_client_secret: Annotated[
        str | None, Variable("OCC_AUTH_GITHUB_CLIENT_SECRET", file=True)
    ] = None
    """Client secret of occ's GitHub OAuth app; required with its client id."""

    auth_google_client_id: Annotated[str | None, Variable("OCC_AUTH_GOOGLE_CLIENT_ID")] = None
    """Client id of occ's Google OAuth client (unset: no Google sign-in)."""

    auth_google_client_secret: Annotated[
        str | None, Variable("OCC_AUTH_GOOGLE_CLIENT_SECRET", file=True)
    ] = None
    """Client secret of occ's Google OAuth client; required with its client id."""

    auth_session_idle_ms: Annotated[int, Variable("OCC_AUTH_SESSION_IDLE_MS")] = 7_200_000
    """A user session unused this long ends (it is refreshed at most once a minute)."""

    auth_session_max_ms: Annotated[int, Variable("OCC_AUTH_SESSION_MAX_MS")] = 43_200_000
    """A user session ends this long after sign-in, however much it is used."""

    auth_cli_token_max_ms: Annotated[int, Variable("OCC_AUTH_CLI_TOKEN_MAX_MS")] = 604_800_000
    """A CLI token (``occ login --browser``) ends this long after sign-in (it has no shorter
    idle timeout); ``occ logout`` or ``DELETE /v1/sessions/<id>`` ends it sooner."""

    @pydantic.model_validator(mode="after")
    def _security_holds(self) -> Security:
        require_positive(
            self, ("auth_session_idle_ms", "auth_session_max_ms", "auth_cli_token_max_ms")
        )
        if self.fingerprint_key is not None and not self.fingerprint_key:
            raise errors.InvalidSettings.at(("fingerprint_key",), "must not be empty")
        return self

    @property
    def credential_fingerprint_key(self) -> str:
        """``fingerprint_key``, or a key derived from ``secret_key`` when it is unset."""
        if self.fingerprint_key is not None:
            return self.fingerprint_key
        digest = hmac.new(self.secret_key.encode(), b"occ-credential-fingerprints", hashlib.sha256)
        return digest.hexdigest()
