"""The authorization-code flow with PKCE (S256) against one provider, with Authlib.

``begin`` makes the authorization URL and the ``Pending`` values the callback needs (state,
nonce, code verifier; the caller keeps them, in a signed cookie); ``finish`` trades the code
for tokens and answers who signed in: for OpenID Connect the ID token's issuer and subject,
its signature checked against the issuer's published keys and its audience, expiry and nonce
checked; for GitHub the user API's numeric id. Provider errors never carry a token or a
secret into the exception.
"""

from __future__ import annotations

import hmac
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Final, cast

import requests
from authlib.common.security import generate_token
from authlib.integrations.base_client import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc6749.errors import OAuth2Error
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from occ.drivers.identity.providers import Provider
from occ.foundation import errors

ID_TOKEN_ALGORITHMS: Final = ["RS256", "RS384", "RS512", "ES256", "ES384", "PS256"]
_METADATA_TTL_S: Final = 3600.0


@dataclass(frozen=True)
class Pending:
    """What the callback needs of a sign-in the browser started (kept by the caller)."""

    provider: str
    state: str
    nonce: str
    verifier: str = field(repr=False)


@dataclass(frozen=True)
class Identity:
    """Who signed in, as the provider names them."""

    issuer: str
    subject: str
    display_name: str


class Client:
    """One provider's flow for a redirect URI; discovery and keys are fetched once an hour."""

    def __init__(self, provider: Provider, *, redirect_uri: str, timeout_s: float = 10.0) -> None:
        self.provider = provider
        self.redirect_uri = redirect_uri
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._metadata: dict[str, Any] | None = None
        self._fetched_at = 0.0

    def begin(self) -> tuple[str, Pending]:
        """The authorization URL to send the browser to, and what its callback needs."""
        pending = Pending(
            provider=self.provider.name,
            state=generate_token(32),
            nonce=generate_token(32),
            verifier=generate_token(64),
        )
        oauth = self._session()
        extra = {"nonce": pending.nonce} if self.provider.discovery_url else {}
        url, _ = oauth.create_authorization_url(
            self._endpoint("authorization_endpoint"),
            state=pending.state,
            code_verifier=pending.verifier,
            **extra,
        )
        return url, pending

    def finish(self, pending: Pending, *, state: str, code: str) -> Identity:
        """Who signed in, from the callback's ``state`` and ``code``.

        Raises:
            Unauthenticated: the state does not match, the provider refused the code, or the
                ID token does not verify.
            DependencyUnavailable: the provider did not answer.
        """
        if pending.provider != self.provider.name or not _same(pending.state, state):
            raise errors.Unauthenticated("the sign-in expired or was not started here")
        oauth = self._session()
        try:
            token = oauth.fetch_token(
                self._endpoint("token_endpoint"),
                code=code,
                code_verifier=pending.verifier,
                timeout=self.timeout_s,
            )
        except requests.RequestException:
            raise errors.DependencyUnavailable("the identity provider did not answer") from None
        except (OAuthError, OAuth2Error, ValueError, KeyError):
            raise errors.Unauthenticated("the identity provider refused the sign-in") from None
        if self.provider.endpoints is not None:
            return self._user_from_api(oauth, self.provider.endpoints.issuer)
        id_token = token.get("id_token")
        if not isinstance(id_token, str):
            raise errors.Unauthenticated("the identity provider sent no ID token")
        return self._verified(id_token, pending.nonce)

    # -- OpenID Connect ---------------------------------------------------------------------

    def _verified(self, id_token: str, nonce: str) -> Identity:
        metadata = self._discovered()
        issuer = str(metadata.get("issuer", ""))
        try:
            keys = KeySet.import_key_set(cast(Any, self._get_json(str(metadata["jwks_uri"]))))
            decoded = jwt.decode(id_token, keys, algorithms=ID_TOKEN_ALGORITHMS)
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": issuer},
                sub={"essential": True},
                aud={"essential": True, "value": self.provider.client_id},
                exp={"essential": True},
                nonce={"essential": True, "value": nonce},
            ).validate(decoded.claims)
        except (JoseError, KeyError, ValueError, TypeError):
            raise errors.Unauthenticated("the ID token does not verify") from None
        claims = decoded.claims
        subject = str(claims["sub"])
        name = next(
            (
                str(claims[key])
                for key in ("name", "email", "preferred_username")
                if isinstance(claims.get(key), str) and claims[key]
            ),
            subject,
        )
        return Identity(issuer=issuer, subject=subject, display_name=name)

    def _discovered(self) -> dict[str, Any]:
        url = self.provider.discovery_url
        assert url is not None
        with self._lock:
            if self._metadata is None or time.monotonic() - self._fetched_at > _METADATA_TTL_S:
                metadata = self._get_json(url)
                needed = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")
                if not all(isinstance(metadata.get(key), str) for key in needed):
                    raise errors.DependencyUnavailable(
                        "the identity provider's discovery document is incomplete"
                    )
                self._metadata, self._fetched_at = metadata, time.monotonic()
            return self._metadata

    # -- plain OAuth 2.0 (GitHub) -------------------------------------------------------------

    def _user_from_api(self, oauth: OAuth2Session, issuer: str) -> Identity:
        endpoints = self.provider.endpoints
        assert endpoints is not None
        try:
            answer = oauth.get(endpoints.user_url, timeout=self.timeout_s)
            answer.raise_for_status()
            user = answer.json()
        except (requests.RequestException, ValueError):
            raise errors.DependencyUnavailable("the identity provider did not answer") from None
        return identity_from_user(issuer, user)

    # -- plumbing -----------------------------------------------------------------------------

    def _endpoint(self, name: str) -> str:
        endpoints = self.provider.endpoints
        if endpoints is not None:
            by_name = {
                "authorization_endpoint": endpoints.authorization_url,
                "token_endpoint": endpoints.token_url,
            }
            return by_name[name]
        return str(self._discovered()[name])

    def _session(self) -> OAuth2Session:
        secret = self.provider.client_secret
        return OAuth2Session(
            client_id=self.provider.client_id,
            client_secret=secret,
            scope=self.provider.scope,
            redirect_uri=self.redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )

    def _get_json(self, url: str) -> dict[str, Any]:
        try:
            answer = requests.get(url, timeout=self.timeout_s)
            answer.raise_for_status()
            found = answer.json()
        except (requests.RequestException, ValueError):
            raise errors.DependencyUnavailable("the identity provider did not answer") from None
        if not isinstance(found, dict):
            raise errors.DependencyUnavailable("the identity provider answered no JSON object")
        return found


def identity_from_user(issuer: str, user: object) -> Identity:
    """The identity a GitHub-style user object names: its numeric ``id`` (never the login,
    which can be renamed and reused) is the subject.

    Raises:
        Unauthenticated: the object has no numeric id.
    """
    if not isinstance(user, dict) or not isinstance(user.get("id"), int):
        raise errors.Unauthenticated("the identity provider named no user")
    subject = str(user["id"])
    name = next(
        (
            str(user[key])
            for key in ("name", "login")
            if isinstance(user.get(key), str) and user[key]
        ),
        subject,
    )
    return Identity(issuer=issuer, subject=subject, display_name=name)


def _same(expected: str, given: str) -> bool:
    return hmac.compare_digest(expected.encode(), given.encode())
