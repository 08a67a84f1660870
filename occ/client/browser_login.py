"""``occ login --browser``: sign the CLI in through the browser (RFC 8252's loopback redirect
with PKCE) and get a CLI token, a revocable credential of the person who signed in.

The client listens on ``127.0.0.1`` on a port the system picks, prints the sign-in URL (and
opens a browser unless told not to), and waits for the browser to come back with a one-time
code and the ``state`` it sent; it trades the code with its PKCE verifier for the token
(``POST /auth/cli/token``). Only the token leaves: the verifier and the code are forgotten.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from occ.client import http

CALLBACK_PATH: Final = "/callback"
_PAGE: Final = (
    "<!doctype html><meta charset=utf-8><title>occ</title><p>{message}</p>"
    "<p>You can close this window.</p>"
)


@dataclass(frozen=True)
class CliToken:
    """What the sign-in gave the CLI; ``repr`` never shows the token."""

    token: str = field(repr=False)
    session_id: str
    principal_id: str
    expires_at: str


@dataclass
class _Arrival:
    """What came back to the loopback server (filled by its handler)."""

    state: str
    code: str | None = None
    error: str | None = None


def challenge_of(verifier: str) -> str:
    """The S256 code challenge of a verifier (RFC 7636)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def provider_of(client: http.Client, requested: str | None) -> str:
    """The provider to sign in with: ``requested``, else the only one the API offers.

    Raises:
        ApiError: the API offers none, several and none was requested, or not that one.
    """
    offered = [str(item["name"]) for item in client.get("/auth/providers").data or []]
    if requested is not None and requested in offered:
        return requested
    if requested is None and len(offered) == 1:
        return offered[0]
    if not offered:
        raise http.ApiError("SIGN_IN_UNAVAILABLE", "the API has no sign-in provider configured")
    raise http.ApiError(
        "INVALID_REQUEST", f"choose a provider with --provider: {', '.join(offered)}"
    )


def sign_in(
    client: http.Client, provider: str, show: Callable[[str], None], *, timeout_s: float
) -> CliToken:
    """Sign in through the browser: ``show`` gets the URL to open; wait up to ``timeout_s``
    for the browser to come back, then trade the code for a CLI token.

    Raises:
        ApiError: the sign-in failed, was refused, or did not come back in time.
    """
    import http.server as loopback  # noqa: PLC0415 - only this command needs it

    verifier = secrets.token_urlsafe(64)
    arrival = _Arrival(state=secrets.token_urlsafe(24))
    server = loopback.HTTPServer(
        ("127.0.0.1", 0), _handler(arrival, loopback.BaseHTTPRequestHandler)
    )
    try:
        redirect = f"http://127.0.0.1:{server.server_port}{CALLBACK_PATH}"
        query = urllib.parse.urlencode(
            {
                "redirect_uri": redirect,
                "state": arrival.state,
                "code_challenge": challenge_of(verifier),
            }
        )
        show(f"{client.url.rstrip('/')}/auth/cli/sign-in/{http.quote(provider)}?{query}")
        deadline = time.monotonic() + timeout_s
        while arrival.code is None and arrival.error is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise http.ApiError("SIGN_IN_TIMEOUT", "the browser did not come back in time")
            server.timeout = min(left, 1.0)
            server.handle_request()
    finally:
        server.server_close()
    if arrival.code is None:
        raise http.ApiError("UNAUTHENTICATED", arrival.error or "the sign-in failed")
    answer = client.post("/auth/cli/token", {"code": arrival.code, "codeVerifier": verifier})
    data: dict[str, Any] = dict(answer.data or {})
    return CliToken(
        token=str(data["token"]),
        session_id=str(data["sessionId"]),
        principal_id=str(data["principalId"]),
        expires_at=str(data["expiresAt"]),
    )


def _handler(arrival: _Arrival, base: type[Any]) -> type[Any]:
    """The loopback server's request handler (on ``base``, the standard library's), which
    records in ``arrival`` the code that comes back with the expected state."""

    class Handler(base):  # type: ignore[misc]
        def do_GET(self) -> None:
            target = urllib.parse.urlsplit(self.path)
            parameters = urllib.parse.parse_qs(target.query)
            state = parameters.get("state", [""])[0]
            if target.path != CALLBACK_PATH or not secrets.compare_digest(
                state.encode(), arrival.state.encode()
            ):
                self._answer(404, "This is not the sign-in occ is waiting for.")
                return
            code = parameters.get("code", [""])[0]
            if code:
                arrival.code = code
                self._answer(200, "Signed in: occ has its token.")
            else:
                arrival.error = "the identity provider did not sign you in"
                self._answer(400, "The sign-in failed; see the terminal.")

        def _answer(self, status: int, message: str) -> None:
            body = _PAGE.format(message=message).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Nothing: the request line holds the code."""

    return Handler
