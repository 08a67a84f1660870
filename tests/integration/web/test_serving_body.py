"""A request's body under occ's gunicorn worker: one that arrives a byte at a time is cut at
``OCC_API_BODY_TIMEOUT_MS`` with 408 ``REQUEST_TIMEOUT`` and frees its connection; a large body
sent at once is read whole."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import pytest

from tests.integration.web import gunicorn_api
from tests.support import databases, processes

BODY_TIMEOUT_MS = 1_000
TRICKLE_S = 0.3
"""Far under the read timeout (30 s): only the body's deadline can end a trickle; not a divisor
of the deadline, so a byte never lands as the server closes."""
CONNECTIONS = 4
"""gunicorn's ``--worker-connections``: as many tricklers fill the worker."""
GIVE_UP_S = 8.0
"""How long a trickler keeps sending without an answer: far past the deadline."""
HEAD = (
    b"POST /auth/cli/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 262144\r\n\r\n"
)
"""A public route whose view reads its body (once sign-in is configured), with the largest body
the API takes."""


@pytest.fixture
def api(database_urls: databases.DatabaseUrls, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """gunicorn serving at most ``CONNECTIONS`` connections, a short body deadline; its port and
    its log."""
    env = {
        "OCC_API_BODY_TIMEOUT_MS": str(BODY_TIMEOUT_MS),
        "OCC_AUTH_SECRET": "s" * 40,  # /auth/cli/token reads its body only then
    }
    log = tmp_path / "gunicorn.log"
    arguments = ("--worker-connections", str(CONNECTIONS))
    with gunicorn_api.running(database_urls, log, env, arguments) as port:
        yield port, log


def _trickle(port: int, sending: threading.Event | None = None) -> tuple[bytes, float]:
    """Send ``HEAD`` and then a byte of body every ``TRICKLE_S`` until the server answers or
    ``GIVE_UP_S`` passes; everything it sent, and the seconds from the head to its close."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(HEAD + b"{")
        began = time.monotonic()
        received = b""
        connection.settimeout(TRICKLE_S)
        while not received and time.monotonic() - began < GIVE_UP_S:
            try:
                received = connection.recv(65536)
            except TimeoutError:
                connection.sendall(b" ")
                if sending is not None:
                    sending.set()
        connection.settimeout(10)
        with_close = received
        try:
            while received:
                received = connection.recv(65536)
                with_close += received
        except ConnectionResetError:
            pass
        return with_close, time.monotonic() - began


def _request_timeout(received: bytes, elapsed: float) -> None:
    """``received`` is the 408 problem+json, sent at the deadline, closing the connection."""
    assert received, f"no answer within {GIVE_UP_S} s of trickling"
    status, headers, body = gunicorn_api.parse(received)
    assert status == 408, received[:300]
    assert headers["content-type"] == "application/problem+json"
    assert headers["connection"] == "close"
    document: dict[str, Any] = json.loads(body)
    assert (document["status"], document["code"]) == (408, "REQUEST_TIMEOUT")
    assert document["title"] == "Request timeout"
    assert document["requestId"] == headers["x-request-id"]
    # the deadline counts from the app's first read, just after the head arrived
    assert BODY_TIMEOUT_MS / 1000 - 0.1 <= elapsed < BODY_TIMEOUT_MS / 1000 + 2, elapsed


def _rejections(log: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == "http.rejected"]


def test_a_body_sent_a_byte_at_a_time_is_cut_at_its_deadline(api: tuple[int, Path]) -> None:
    port, log = api
    received, elapsed = _trickle(port)
    _request_timeout(received, elapsed)
    [line] = processes.wait_for(
        lambda: _rejections(log) or None, timeout=10, message="the http.rejected line"
    )
    assert (line["status"], line["code"], line["error"]) == (408, "REQUEST_TIMEOUT", "BodyTimeout")
    assert (line["method"], line["path"]) == ("POST", "/auth/cli/token")
    # the connection it held is free: the worker serves the next request
    assert gunicorn_api.status_of(port, "/healthz") == 200


def test_tricklers_filling_the_worker_are_cut_and_healthz_then_answers(
    api: tuple[int, Path],
) -> None:
    """As many tricklers as the worker serves connections: each is cut at its deadline, so a
    /healthz queued behind them is answered (it waited for good before)."""
    port, _ = api
    sending = [threading.Event() for _ in range(CONNECTIONS)]
    with futures.ThreadPoolExecutor(CONNECTIONS) as pool:
        tricklers = [pool.submit(_trickle, port, event) for event in sending]
        for event in sending:  # each trickler's connection is open and past its head
            assert event.wait(10)
        began = time.monotonic()
        status = gunicorn_api.status_of(port, "/healthz")
        waited = time.monotonic() - began
        assert status == 200
        assert waited < BODY_TIMEOUT_MS / 1000 + 2, waited
        for trickler in tricklers:
            _request_timeout(*trickler.result(timeout=GIVE_UP_S + 5))


def test_a_large_body_sent_at_once_is_read_whole(api: tuple[int, Path]) -> None:
    port, _ = api
    body = json.dumps({"code": 7, "codeVerifier": "v", "padding": "a" * 250 * 1024}).encode()
    assert len(body) < 256 * 1024  # the API's largest body
    head = (
        b"POST /auth/cli/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    status, _, answer = gunicorn_api.exchange(port, head + body)
    # the view read and parsed the whole body: it names the body's own bad field
    document = json.loads(answer)
    assert status == 400, document
    assert [error["pointer"] for error in document["errors"]] == ["/code"]
