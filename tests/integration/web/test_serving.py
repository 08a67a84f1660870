"""occ's gunicorn worker in a real gunicorn process: what gunicorn refuses before the app sees it
(a request line or header fields over its limits, a malformed request) is problem+json with a
stable code, and never echoes the request; slow clients on real sockets hold no worker, and the
read timeouts close them."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from occ.web import serving
from tests.integration.web import gunicorn_api
from tests.support import databases

MARKER = "sensitive-token-7f3a"
"""Put in every refused request: it must never come back in an answer."""
HEADER_TIMEOUT_MS = 2_500
READ_TIMEOUT_MS = 1_000
"""Shorter than the header timeout, so which of the two ended a connection shows in its time."""
SLOW_CLIENTS = 200


@pytest.fixture
def api(database_urls: databases.DatabaseUrls, tmp_path: Path) -> Iterator[tuple[str, int]]:
    """gunicorn with occ's worker class on a free loopback port, stopped at the end."""
    env = {
        "OCC_API_HEADER_TIMEOUT_MS": str(HEADER_TIMEOUT_MS),
        "OCC_API_READ_TIMEOUT_MS": str(READ_TIMEOUT_MS),
    }
    with gunicorn_api.running(database_urls, tmp_path / "gunicorn.log", env) as port:
        yield "127.0.0.1", port


def _problem(answer: gunicorn_api.Answer, status: int, code: str) -> dict[str, Any]:
    got, headers, body = answer
    assert got == status, (got, headers, body[:300])
    assert headers["content-type"] == "application/problem+json"
    assert int(headers["content-length"]) == len(body)
    document: dict[str, Any] = json.loads(body)
    assert document["status"] == status and document["code"] == code
    assert document["title"] and document["detail"]
    assert document["requestId"] == headers["x-request-id"]
    assert document["requestId"].startswith("req_")
    assert MARKER.encode() not in body
    return document


def test_a_uri_over_the_limit_is_414_problem_json(api: tuple[str, int]) -> None:
    _, port = api
    path = f"/v1/namespaces?{MARKER}=" + "a" * 5 * 1024
    answer = gunicorn_api.exchange(port, f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    document = _problem(answer, 414, "URI_TOO_LONG")
    assert document["title"] == "URI too long"


def test_header_fields_over_the_limit_are_431_problem_json(api: tuple[str, int]) -> None:
    _, port = api
    header = f"X-Padding: {MARKER}{'b' * 20 * 1024}"
    answer = gunicorn_api.exchange(
        port, f"GET /healthz HTTP/1.1\r\nHost: x\r\n{header}\r\n\r\n".encode()
    )
    document = _problem(answer, 431, "REQUEST_HEADER_FIELDS_TOO_LARGE")
    assert document["title"] == "Request header fields too large"


def test_a_malformed_request_is_400_problem_json(api: tuple[str, int]) -> None:
    _, port = api
    answer = gunicorn_api.exchange(
        port, f"GET /healthz HTTP/1.1\r\nHost: x\r\nBad{MARKER} Header\r\n\r\n".encode()
    )
    _problem(answer, 400, "MALFORMED_REQUEST")
    answer = gunicorn_api.exchange(port, f"G@T /{MARKER} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    _problem(answer, 400, "MALFORMED_REQUEST")


def test_requests_gunicorn_can_parse_still_reach_the_app(api: tuple[str, int]) -> None:
    _, port = api
    status, headers, body = gunicorn_api.exchange(
        port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert status == 200 and json.loads(body) == {"status": "ok"}
    status, headers, body = gunicorn_api.exchange(
        port, b"GET /v1/namespaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert status == 401 and headers["content-type"] == "application/problem+json"


def test_other_errors_stay_with_gunicorn() -> None:
    assert serving.refusal_for(RuntimeError("boom")) is None
    assert serving.refusal_for(ValueError("x")) is None


def _slow_clients(port: int, count: int) -> list[socket.socket]:
    """``count`` connections, each having sent the first bytes of a request line and no more."""
    held = []
    for _ in range(count):
        connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        connection.sendall(b"GET /hea")
        held.append(connection)
    return held


def test_slow_clients_hold_no_worker(api: tuple[str, int]) -> None:
    """One worker, 200 connections that never finish their request line: /healthz and the app
    still answer (the sync worker answered nothing while two were held)."""
    _, port = api
    held = _slow_clients(port, SLOW_CLIENTS)
    try:
        for _ in range(20):  # each within _exchange's socket timeout, far under the held ones'
            status, _, body = gunicorn_api.exchange(
                port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            assert status == 200 and json.loads(body) == {"status": "ok"}
        status, _, _ = gunicorn_api.exchange(
            port, b"GET /v1/namespaces HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert status == 401
    finally:
        for connection in held:
            connection.close()


def test_a_request_head_sent_a_byte_at_a_time_is_cut_at_the_header_timeout(
    api: tuple[str, int],
) -> None:
    _, port = api
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        began = time.monotonic()
        closed = False
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 400:
            try:
                connection.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if gunicorn_api.closed_by_server(connection, 0.05):
                closed = True
                break
        elapsed = time.monotonic() - began
    assert closed, "the connection outlived every byte sent"
    # each byte arrives well within the read timeout: only the header deadline closes it
    assert HEADER_TIMEOUT_MS / 1000 <= elapsed < HEADER_TIMEOUT_MS / 1000 + 3


def test_an_idle_connection_is_closed_at_the_header_timeout(api: tuple[str, int]) -> None:
    _, port = api
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        began = time.monotonic()
        assert gunicorn_api.closed_by_server(connection, HEADER_TIMEOUT_MS / 1000 + 5)
        # the first read waits no longer than the read timeout
        assert time.monotonic() - began < HEADER_TIMEOUT_MS / 1000


def test_a_stalled_body_is_cut_at_the_read_timeout(api: tuple[str, int]) -> None:
    """The head arrives whole, the body never does: the read timeout ends the connection."""
    _, port = api
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(
            b"POST /v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        began = time.monotonic()
        received = b""
        connection.settimeout(READ_TIMEOUT_MS / 1000 + 10)
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
        elapsed = time.monotonic() - began
    # the app refuses the unauthenticated request without reading its body
    assert received.startswith(b"HTTP/1.1 401 "), received[:200]
    # then gunicorn reads the rest of the body before the next request: the read timeout, not
    # the longer header timeout, ends that wait
    assert READ_TIMEOUT_MS / 1000 - 0.2 <= elapsed < HEADER_TIMEOUT_MS / 1000, elapsed
