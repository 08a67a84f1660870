"""A small JSON client of the occ REST API (``occ.client.wire``): requests, envelopes, problems.

Answers ``data`` (and ``meta``) of the envelope, or raises ``ApiError`` with the problem's
``code``, ``detail`` and ``requestId``. The key goes only into the ``Authorization`` header:
never into an error, a URL or a log. Every POST carries an ``Idempotency-Key`` of its own and
is sent once more, with the same key, when no answer came: the API applies it at most once.
"""

from __future__ import annotations

import json
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from occ.client import wire

USER_AGENT: Final = "occ-client"
UNREACHABLE: Final = "UNREACHABLE"
TIMEOUT_S: Final = 30.0


TRANSIENT_STATUSES: Final = frozenset({429, 503})
"""Refusals that say "try again later" (with ``Retry-After``)."""


class ApiError(Exception):
    """A refused or failed request: the problem's code and detail (or the client's own), and
    the seconds ``Retry-After`` asked to wait."""

    def __init__(
        self,
        code: str,
        detail: str,
        status: int | None = None,
        *,
        retry_after_s: float | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.status = status
        self.retry_after_s = retry_after_s
        self.request_id = request_id

    @property
    def message(self) -> str:
        """The detail as a user reads it: a server error (5xx) names its request, for the
        API's logs."""
        if self.request_id is None or self.status is None or self.status < 500:
            return self.detail
        return f"{self.detail} (request {self.request_id})"

    @property
    def transient(self) -> bool:
        """Whether the same request may succeed later: rate limited (429), unavailable (503),
        or no answer at all."""
        return self.status in TRANSIENT_STATUSES or self.code == UNREACHABLE


@dataclass(frozen=True)
class Answer:
    """A successful response: its status, ``data`` and ``meta`` (``None`` for 204)."""

    status: int
    data: Any
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Client:
    """The API at ``url`` with one key; ``repr`` never shows the key. ``via_proxy``: send
    through the proxy the environment names (``wire.proxied``)."""

    url: str
    key: str = field(repr=False)
    timeout_s: float = TIMEOUT_S
    via_proxy: bool = False

    def get(self, path: str, query: Mapping[str, object] | None = None) -> Answer:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Mapping[str, Any] | None = None) -> Answer:
        return self.request("POST", path, body=body if body is not None else {})

    def patch(self, path: str, body: Mapping[str, Any]) -> Answer:
        return self.request("PATCH", path, body=body)

    def delete(self, path: str) -> Answer:
        return self.request("DELETE", path)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, object] | None = None,
    ) -> Answer:
        """Send one request; ``ApiError`` for a problem answer or an unreachable API."""
        target = self.url.rstrip("/") + path
        if query:
            pairs = {name: str(value) for name, value in query.items() if value is not None}
            if pairs:
                target += "?" + urllib.parse.urlencode(pairs)
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        sends = 1
        if method == "POST":  # a change: the key lets a second send after no answer be safe
            headers["Idempotency-Key"] = f"occ-cli-{uuid.uuid4()}"
            sends = 2
        for send in range(1, sends + 1):
            try:
                # check_url admitted only http and https URLs into a Client
                response = wire.exchange(
                    method,
                    target,
                    headers,
                    data,
                    timeout_s=self.timeout_s,
                    via_proxy=self.via_proxy,
                )
                break
            except wire.Unreachable as error:
                if send < sends:
                    continue
                outcome = " (if it arrived, it may have been applied)" if sends > 1 else ""
                raise ApiError(
                    UNREACHABLE, f"cannot reach the API at {self.url}: {error.reason}{outcome}"
                ) from None
        if response.status >= 300:  # the API redirects nowhere
            raise problem(response.status, response.body, response.headers)
        return _answer(response.status, response.body)


def _answer(status: int, raw: bytes) -> Answer:
    if status == 204 or not raw:
        return Answer(status, None)
    try:
        document = json.loads(raw)
    except ValueError:
        raise ApiError("INVALID_RESPONSE", f"the API answered {status} with no JSON") from None
    if not isinstance(document, dict) or "data" not in document:
        raise ApiError("INVALID_RESPONSE", f"the API answered {status} without an envelope")
    meta = document.get("meta")
    return Answer(status, document["data"], meta if isinstance(meta, dict) else {})


def problem(status: int, raw: bytes, headers: Mapping[str, str] | None = None) -> ApiError:
    """The ``ApiError`` of a problem answer (its code, detail and field errors, its
    ``Retry-After`` in seconds and its request id)."""
    try:
        document = json.loads(raw) if raw else {}
    except ValueError:
        document = {}
    if not isinstance(document, dict):
        document = {}
    code = str(document.get("code") or f"HTTP_{status}")
    detail = str(document.get("detail") or f"the API answered {status}")
    errors = document.get("errors")
    if isinstance(errors, list) and errors:
        detail = "; ".join(
            f"{item.get('pointer', '')}: {item.get('message', '')}"
            for item in errors
            if isinstance(item, dict)
        )
    headers = headers or {}
    retry_after = headers.get("retry-after", "").strip()
    retry_after_s = float(retry_after) if retry_after.isdigit() else None  # never an HTTP date
    request_id = document.get("requestId") or headers.get("x-request-id")
    return ApiError(
        code,
        detail,
        status,
        retry_after_s=retry_after_s,
        request_id=None if request_id is None else str(request_id),
    )


def check_url(url: str) -> str:
    """The API's base URL without a trailing slash, or ``ApiError``: http(s), a host, no
    credentials, query or fragment."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError("INVALID_URL", "the API URL must be http:// or https:// with a host")
    if parts.username is not None or parts.password is not None:
        raise ApiError("INVALID_URL", "the API URL must not hold credentials")
    if parts.query or parts.fragment:
        raise ApiError("INVALID_URL", "the API URL must not have a query or fragment")
    return url.rstrip("/")


def quote(segment: str) -> str:
    """A path segment (ids are plain, work ids hold colons)."""
    return urllib.parse.quote(segment, safe=":")
