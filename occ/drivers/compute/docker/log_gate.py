"""A read-only gate in front of the Docker Engine: only what reading a gateway's log needs.

The API reads gateway logs (``occ agents logs``) from the Docker Engine, but the engine's
socket is root on its host, and the API is the process that faces users. Where the API runs
apart from the socket (docker compose), ``occ docker log-gate`` holds the socket instead and
listens on a unix socket of its own, which the API names as its ``OCC_DOCKER_HOST``. The gate
lets through ``GET`` (and ``HEAD``) requests of three kinds and nothing else:

* the engine's ``version`` and ``_ping`` (the SDK negotiates its API version);
* an occ gateway container's log (``occ-gw-<16 hex>``), relayed as the engine streams it;
* that container's inspect document, cut down to ``Id``, ``Name`` and ``Config.Tty`` (the SDK
  asks whether the container has a terminal before it reads the log).

Anything else answers 403 in the engine's error shape (``{"message": ...}``), logged as
``docker.log-gate-refused``. A relayed stream ends when the engine ends it, when the client
leaves, or after ``idle_s`` without a byte.
"""

from __future__ import annotations

import enum
import http.client
import http.server
import json
import os
import re
import socket
import socketserver
import urllib.parse
from dataclasses import dataclass
from typing import Any, Final

from occ.drivers.compute.docker import naming
from occ.telemetry import observability

"""The name of an occ gateway container (``naming.gateway``)."""
_VERSIONED: Final = re.compile(r"/v1\.[0-9]{1,3}(/.*)")
_RELAYED_HEADERS: Final = ("Content-Type", "Api-Version", "Docker-Experimental", "Ostype")
_CHUNK: Final = 64 * 1024
_MAX_DRAINED: Final = 1024 * 1024
"""The largest body of a refused request that is read (and dropped) before the answer."""


class Reach(enum.Enum):
    """What a let-through request reaches."""

    ENGINE = "engine"
    LOGS = "logs"
    INSPECT = "inspect"


@dataclass(frozen=True)
class Passage:
    """A request the gate lets through: what it reaches, and its target (path and query)."""

    reach: Reach
    target: str


def passage(method: str, target: str) -> Passage | None:
    """What ``method target`` may reach through the gate; ``None``: refused."""
    if method not in ("GET", "HEAD"):
        return None
    split = urllib.parse.urlsplit(target)
    versioned = _VERSIONED.fullmatch(split.path)
    path = versioned.group(1) if versioned else split.path
    if path in ("/_ping", "/version"):
        return Passage(Reach.ENGINE, target)
    parts = path.split("/")
    if (
        len(parts) != 4
        or parts[:2] != ["", "containers"]
        or not naming.GATEWAY_NAME.fullmatch(parts[2])
    ):
        return None
    if parts[3] == "logs":
        return Passage(Reach.LOGS, target)
    if parts[3] == "json" and not split.query:
        return Passage(Reach.INSPECT, target)
    return None


def cut_inspection(document: dict[str, Any]) -> dict[str, Any]:
    """The part of a container's inspect document that a log read needs."""
    config = document.get("Config") or {}
    return {
        "Id": document.get("Id"),
        "Name": document.get("Name"),
        "Config": {"Tty": bool(config.get("Tty"))},
    }


class UnixConnection(http.client.HTTPConnection):
    """HTTP over a unix socket: the engine's, or the gate's own."""

    def __init__(self, path: str, timeout_s: float) -> None:
        super().__init__("docker", timeout=timeout_s)
        self.socket_path = path

    def connect(self) -> None:
        connected = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connected.settimeout(self.timeout)
        connected.connect(self.socket_path)
        self.sock = connected


class LogGate(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """The gate: listens on ``socket_path``, relays to the engine's socket ``engine_path``."""

    daemon_threads = True

    def __init__(self, socket_path: str, engine_path: str, *, idle_s: float) -> None:
        if os.path.exists(socket_path):
            os.unlink(socket_path)  # a socket left by an earlier gate
        super().__init__(socket_path, _Relay)
        os.chmod(socket_path, 0o660)
        self.engine_path = engine_path
        self.idle_s = idle_s


class _Relay(http.server.BaseHTTPRequestHandler):
    server: LogGate
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._relay()

    def do_HEAD(self) -> None:
        self._relay()

    def do_POST(self) -> None:
        self._relay()

    def do_PUT(self) -> None:
        self._relay()

    def do_DELETE(self) -> None:
        self._relay()

    def _relay(self) -> None:
        self.close_connection = True
        allowed = passage(self.command, self.path)
        if allowed is None:
            observability.log("docker.log-gate-refused", method=self.command, path=self.path)
            self._drain_body()  # closing on an unread body would reset the client's read
            self._answer(403, {"message": "the log gate lets through gateway log reads only"})
            return
        engine = UnixConnection(self.server.engine_path, self.server.idle_s)
        try:
            engine.request(self.command, allowed.target)
            response = engine.getresponse()
            if allowed.reach is Reach.INSPECT and response.status == 200:
                self._answer(200, cut_inspection(json.loads(response.read())))
            else:
                self._stream(response)
        except OSError:
            pass  # the engine went quiet past idle_s, or the client left: the stream ends
        finally:
            engine.close()

    def _drain_body(self) -> None:
        length = self.headers.get("Content-Length", "0")
        if length.isdigit() and int(length) <= _MAX_DRAINED:
            self.rfile.read(int(length))

    def _stream(self, response: http.client.HTTPResponse) -> None:
        self.send_response(response.status)
        for name in _RELAYED_HEADERS:
            value = response.getheader(name)
            if value is not None:
                self.send_header(name, value)
        self.send_header("Connection", "close")  # the body ends when the stream does
        self.end_headers()
        if self.command == "HEAD":
            return
        while chunk := response.read1(_CHUNK):
            self.wfile.write(chunk)
            self.wfile.flush()

    def _answer(self, status: int, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def address_string(self) -> str:
        return "unix"  # a unix socket's peer has no address

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: refusals are logged as events, and a relayed request is not worth a line."""
