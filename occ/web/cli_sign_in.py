"""The browser's side of ``occ login --browser`` (RFC 8252, a loopback redirect with PKCE).

The CLI listens on ``http://127.0.0.1:<port>/...``, opens ``GET /auth/cli/sign-in/<provider>``
with that ``redirect_uri``, a ``state`` and a ``code_challenge`` (S256), and the browser signs
in with the provider as for the console. The callback then sends the browser to the CLI's
``redirect_uri`` with a ``code`` instead of giving it a session cookie. The code seals (signed
with ``OCC_AUTH_SECRET``, two minutes) the one-time row ``occ.controller.cli_sign_in`` issued
and the challenge: ``POST /auth/cli/token`` trades it for a CLI token only with the verifier
whose S256 hash is that challenge, so a process that merely sees the redirect cannot.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

import itsdangerous

from occ.controller import cli_sign_in
from occ.foundation import errors

_STATE: Final = re.compile(r"[A-Za-z0-9._~-]{16,128}")
_CHALLENGE: Final = re.compile(r"[A-Za-z0-9_-]{43}")
_VERIFIER: Final = re.compile(r"[A-Za-z0-9._~-]{43,128}")
_CODE_MAX_AGE_S: Final = int(cli_sign_in.CODE_LIFETIME.total_seconds())


def request_of(arguments: Mapping[str, str]) -> dict[str, str]:
    """The CLI's ``redirect_uri``, ``state`` and ``code_challenge``, checked.

    Raises:
        InvalidInput: a redirect that is not ``http`` to a loopback address (an IP literal,
            RFC 8252 7.3) with a port, a ``state`` not of 16 to 128 unreserved characters, or a
            ``code_challenge`` that is not an S256 hash (43 base64url characters).
    """
    redirect = arguments.get("redirect_uri", "")
    if not is_loopback_redirect(redirect):
        raise errors.InvalidInput.at(
            ("redirect_uri",), "must be http://127.0.0.1:<port>/... or http://[::1]:<port>/..."
        )
    state = arguments.get("state", "")
    if not _STATE.fullmatch(state):
        raise errors.InvalidInput.at(("state",), "must be 16 to 128 unreserved characters")
    challenge = arguments.get("code_challenge", "")
    if not _CHALLENGE.fullmatch(challenge):
        raise errors.InvalidInput.at(
            ("code_challenge",), "must be the S256 hash of the verifier (43 base64url characters)"
        )
    return {"redirect_uri": redirect, "state": state, "challenge": challenge}


def is_loopback_redirect(url: str) -> bool:
    """Whether ``url`` is ``http`` to a loopback IP literal with a port, and nothing else (no
    user, query or fragment), written in visible ASCII only: ``urlsplit`` drops tabs and line
    ends it meets, which a ``Location`` header may not carry."""
    if not all("!" <= character <= "~" for character in url):
        return False
    try:
        parsed = urllib.parse.urlsplit(url)
        port = parsed.port
        address = ipaddress.ip_address(parsed.hostname or "")
    except ValueError:
        return False
    return (
        parsed.scheme == "http"
        and port is not None
        and address.is_loopback
        and not (parsed.username or parsed.password or parsed.query or parsed.fragment)
    )


def redirect_to_cli(secret_key: str, request: Mapping[str, Any], row_token: str) -> str:
    """Where the browser goes after signing in for the CLI: its redirect with the sealed code
    and its state."""
    sealed = _signer(secret_key).dumps({"t": row_token, "c": str(request["challenge"])})
    query = urllib.parse.urlencode({"code": sealed, "state": str(request["state"])})
    return f"{request['redirect_uri']}?{query}"


def opened(secret_key: str, code: object, verifier: object) -> str:
    """The one-time row's token a sealed code carries, once the verifier matches its challenge.

    Raises:
        InvalidInput: ``code`` or ``codeVerifier`` is not a string of the right form.
        Unauthenticated: the code is forged or older than two minutes, or the verifier is not
            the one the CLI started with.
    """
    if not isinstance(code, str) or not 1 <= len(code) <= 4096:
        raise errors.InvalidInput.at(("code",), "must be the code the sign-in redirected with")
    if not isinstance(verifier, str) or not _VERIFIER.fullmatch(verifier):
        raise errors.InvalidInput.at(("codeVerifier",), "must be 43 to 128 unreserved characters")
    try:
        sealed = _signer(secret_key).loads(code, max_age=_CODE_MAX_AGE_S)
    except itsdangerous.BadData:
        raise errors.Unauthenticated("the sign-in code is invalid, used or expired") from None
    if not isinstance(sealed, dict) or not isinstance(sealed.get("t"), str):
        raise errors.Unauthenticated("the sign-in code is invalid, used or expired")
    if not hmac.compare_digest(challenge_of(verifier), str(sealed.get("c", ""))):
        raise errors.Unauthenticated("the code verifier does not match the sign-in")
    return str(sealed["t"])


def challenge_of(verifier: str) -> str:
    """The S256 code challenge of a verifier (RFC 7636)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _signer(secret_key: str) -> itsdangerous.URLSafeTimedSerializer:
    return itsdangerous.URLSafeTimedSerializer(secret_key, salt="occ-cli-sign-in")
