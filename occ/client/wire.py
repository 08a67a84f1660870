"""One HTTP/1.1 exchange with the API: the client's own light path, and ``urllib`` through a proxy.

``urllib.request`` imports ``http.client``, ``email``, ``ssl``, ``tempfile`` and more: most of a
short command's start. The light path needs ``socket`` only (and ``ssl`` for an https URL): it
sends one request with ``Connection: close`` and reads the answer to the end (``Content-Length``,
chunked, or until the server closes). A proxy named by the environment (``http_proxy``,
``https_proxy``, ``all_proxy``, upper case too) sends the request through ``urllib.request``,
which knows proxies and ``no_proxy``.
"""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

PROXY_VARIABLES: Final = ("http_proxy", "https_proxy", "all_proxy")
_MAX_HEAD: Final = 64 * 1024


@dataclass(frozen=True)
class Response:
    """A complete answer: its status, body (whatever the status) and headers (names in lower
    case)."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


class Unreachable(Exception):
    """No answer: the connection failed, timed out, or the answer was not HTTP."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def proxied(environ: Mapping[str, str]) -> bool:
    """Whether the environment names a proxy (then ``exchange`` goes through ``urllib``)."""
    return any(environ.get(name) or environ.get(name.upper()) for name in PROXY_VARIABLES)


def exchange(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    timeout_s: float,
    via_proxy: bool = False,
) -> Response:
    """Send one request to the absolute http(s) ``url``; its ``Response``, or ``Unreachable``."""
    if via_proxy:
        return _through_urllib(method, url, headers, body, timeout_s)
    parts = urllib.parse.urlsplit(url)
    secure = parts.scheme == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if secure else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    authority = parts.netloc.rpartition("@")[2]
    lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body is not None or method in ("POST", "PATCH", "PUT"):
        lines.append(f"Content-Length: {len(body or b'')}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw:
            connection = _secured(raw, host) if secure else raw
            connection.sendall(request)
            received = _read_to_end(connection)
    except OSError as error:  # refused, unresolvable, timed out, TLS failure
        raise Unreachable(str(error) or type(error).__name__) from None
    return _parsed(received, head_only=method == "HEAD")


def _secured(raw: socket.socket, host: str) -> socket.socket:
    import ssl  # noqa: PLC0415 - only an https URL pays for it

    return ssl.create_default_context().wrap_socket(raw, server_hostname=host)


def _read_to_end(connection: socket.socket) -> bytes:
    """The whole answer: until the server closes, or sooner once it is complete."""
    received = bytearray()
    while chunk := connection.recv(65536):
        received += chunk
        if _complete(bytes(received)):
            break
    return bytes(received)


def _complete(received: bytes) -> bool:
    head, separator, rest = received.partition(b"\r\n\r\n")
    if not separator:
        return False
    lowered = head.lower()
    if b"transfer-encoding: chunked" in lowered:
        return rest.endswith(b"0\r\n\r\n")
    for line in lowered.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip() == b"content-length" and value.strip().isdigit():
            return len(rest) >= int(value.strip())
    return False


def _parsed(received: bytes, *, head_only: bool) -> Response:
    head, separator, rest = received.partition(b"\r\n\r\n")
    if not separator or len(head) > _MAX_HEAD:
        raise Unreachable("the answer was not HTTP")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, _, status_text = status_line.partition(" ")
    code = status_text[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise Unreachable("the answer was not HTTP")
    fields: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    status = int(code)
    if head_only or status in (204, 304) or 100 <= status < 200:
        return Response(status, b"", fields)
    if "chunked" in fields.get("transfer-encoding", "").lower():
        return Response(status, _unchunked(rest), fields)
    length = fields.get("content-length")
    if length is not None:
        if not length.isdigit() or len(rest) < int(length):
            raise Unreachable("the answer ended early")
        return Response(status, rest[: int(length)], fields)
    return Response(status, rest, fields)


def _unchunked(data: bytes) -> bytes:
    body: list[bytes] = []
    position = 0
    while True:
        line_end = data.find(b"\r\n", position)
        if line_end < 0:
            raise Unreachable("the answer ended early")
        size_text = data[position:line_end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise Unreachable("the answer was not HTTP") from None
        if size == 0:
            return b"".join(body)
        start = line_end + 2
        if len(data) < start + size:
            raise Unreachable("the answer ended early")
        body.append(data[start : start + size])
        position = start + size + 2


def _through_urllib(
    method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout_s: float
) -> Response:
    import urllib.error  # noqa: PLC0415 - only through a proxy
    import urllib.request  # noqa: PLC0415

    # the client admitted only http and https URLs
    request = urllib.request.Request(url, data=body, method=method, headers=dict(headers))  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310
            return Response(int(answer.status), answer.read(), _lowered(answer.headers.items()))
    except urllib.error.HTTPError as refused:
        return Response(refused.code, refused.read(), _lowered(refused.headers.items()))
    except (TimeoutError, urllib.error.URLError, ConnectionError) as error:
        raise Unreachable(str(getattr(error, "reason", error))) from None


def _lowered(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {name.lower(): value for name, value in pairs}
