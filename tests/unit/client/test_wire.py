"""The client's HTTP exchange against real local servers: lengths, chunks, errors, refusals, a
proxy, and what a command imports."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from occ.client import http as client_http
from occ.client import wire

CHUNKED_BODY = b'{"data": {"chunked": true}}'


class _Api(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection unless the client says close
    seen: ClassVar[list[dict[str, Any]]] = []

    def _send(self, status: int, body: bytes, *, chunked: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for start in range(0, len(body), 5):
                piece = body[start : start + 5]
                self.wfile.write(f"{len(piece):x};x=y\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def do_GET(self) -> None:
        _Api.seen.append({"path": self.path, "headers": dict(self.headers)})
        if self.path == "/chunked":
            self._send(200, CHUNKED_BODY, chunked=True)
        elif self.path == "/missing":
            problem = {"code": "NOT_FOUND", "detail": "no such thing", "status": 404}
            self._send(404, json.dumps(problem).encode())
        elif self.path == "/busy":
            problem = {"code": "RATE_LIMITED", "detail": "slow down", "status": 429}
            self.send_response(429)
            self.send_header("Retry-After", "7")
            self.send_header("Content-Length", str(len(json.dumps(problem))))
            self.end_headers()
            self.wfile.write(json.dumps(problem).encode())
        elif self.path == "/broken":
            problem = {"code": "INTERNAL", "detail": "it broke", "requestId": "req_1"}
            self._send(500, json.dumps(problem).encode())
        elif self.path == "/empty":
            self.send_response(204)
            self.end_headers()
        else:
            self._send(200, json.dumps({"data": {"path": self.path}, "meta": {}}).encode())

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        received = json.loads(self.rfile.read(length))
        self._send(201, json.dumps({"data": {"received": received}}).encode())

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def api() -> Iterator[str]:
    _Api.seen.clear()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_answers_with_a_length_chunks_and_none(api: str) -> None:
    client = client_http.Client(api, "occ_k_s", timeout_s=5)
    assert client.get("/v1/things", {"name": "a b", "skip": None}).data == {
        "path": "/v1/things?name=a+b"
    }
    chunked = wire.exchange("GET", f"{api}/chunked", {}, None, timeout_s=5)
    assert (chunked.status, chunked.body) == (200, CHUNKED_BODY)
    assert chunked.headers["transfer-encoding"] == "chunked"
    assert client.get("/empty") == client_http.Answer(204, None)
    created = client.post("/v1/things", {"name": "ä"})
    assert (created.status, created.data) == (201, {"received": {"name": "ä"}})
    sent = _Api.seen[0]["headers"]
    assert sent["Authorization"] == "Bearer occ_k_s" and sent["Connection"] == "close"


def test_a_problem_answer_is_an_api_error(api: str) -> None:
    with pytest.raises(client_http.ApiError) as raised:
        client_http.Client(api, "occ_k_s", timeout_s=5).get("/missing")
    assert (raised.value.code, raised.value.detail, raised.value.status) == (
        "NOT_FOUND",
        "no such thing",
        404,
    )


@pytest.mark.parametrize("via_proxy", [False, True])
def test_a_refusal_for_now_carries_its_retry_after(api: str, *, via_proxy: bool) -> None:
    client = client_http.Client(api, "occ_k_s", timeout_s=5, via_proxy=via_proxy)
    with pytest.raises(client_http.ApiError) as raised:
        client.get("/busy")
    assert (raised.value.code, raised.value.retry_after_s) == ("RATE_LIMITED", 7)
    assert raised.value.transient
    with pytest.raises(client_http.ApiError) as missing:
        client.get("/missing")
    assert (missing.value.retry_after_s, missing.value.transient) == (None, False)


def test_a_server_error_names_its_request(api: str) -> None:
    client = client_http.Client(api, "occ_k_s", timeout_s=5)
    with pytest.raises(client_http.ApiError) as broken:
        client.get("/broken")
    assert (broken.value.request_id, broken.value.message) == ("req_1", "it broke (request req_1)")
    refused = client_http.problem(404, b'{"detail": "gone", "requestId": "req_2"}')
    assert (refused.request_id, refused.message) == ("req_2", "gone")  # a refusal: kept short
    no_body = client_http.problem(502, b"", {"x-request-id": "req_3"})
    assert no_body.message == "the API answered 502 (request req_3)"


def test_nothing_listening_or_not_http_is_unreachable() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(client_http.ApiError) as raised:
        client_http.Client(f"http://127.0.0.1:{port}", "occ_k_s", timeout_s=5).get("/v1/x")
    assert raised.value.code == "UNREACHABLE" and raised.value.transient
    assert "occ_k_s" not in str(raised.value)

    garbage = b"SSH-2.0-OpenSSH\r\n\r\n"
    with _answering(garbage) as url, pytest.raises(wire.Unreachable, match="not HTTP"):
        wire.exchange("GET", f"{url}/v1/x", {}, None, timeout_s=5)


def test_a_short_answer_is_unreachable_not_truncated() -> None:
    short = b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{}"
    with _answering(short) as url, pytest.raises(wire.Unreachable, match="ended early"):
        wire.exchange("GET", f"{url}/", {}, None, timeout_s=5)


@contextlib.contextmanager
def _answering(reply: bytes) -> Iterator[str]:
    """The base URL of a one-shot server that reads a request, sends ``reply`` and closes."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def answer() -> None:
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(reply)

        threading.Thread(target=answer, daemon=True).start()
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_proxy_in_the_environment_goes_through_urllib(api: str) -> None:
    assert wire.proxied({"HTTPS_PROXY": "http://proxy:3128"})
    assert wire.proxied({"all_proxy": "socks5://proxy"})
    assert not wire.proxied({"http_proxy": "", "PATH": "/bin"})
    # through urllib (no proxy is set in this process), the same answers
    client = client_http.Client(api, "occ_k_s", timeout_s=5, via_proxy=True)
    assert client.get("/v1/things").data == {"path": "/v1/things"}
    with pytest.raises(client_http.ApiError) as raised:
        client.get("/missing")
    assert raised.value.code == "NOT_FOUND"


def test_the_client_imports_no_heavy_http_module() -> None:
    probe = (
        "import sys; import occ.client.commands, occ.client.http, occ.client.wire; "
        "print(sorted(m for m in ('urllib.request', 'http.client', 'email', 'ssl') "
        "if m in sys.modules))"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert ran.stdout.strip() == "[]", ran.stdout
