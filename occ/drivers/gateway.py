"""The stand-in gateway: a small HTTP server in place of the OpenClaw harness, stdlib only.

The ``local`` Compute Driver runs one per AgentRevision (``python -m occ.drivers.gateway`` or
``occ gateway``). It serves

* ``GET /healthz``: 200 ``{"status": "ok", "revisionId", "agentId",
  "configurationGeneration", "credentialFingerprint", "warnings"}`` (the keyed fingerprint of
  the credential read from ``--credential-file`` at start, under the revision's fingerprint key
  read from the file ``fingerprint-key`` beside it; ``null`` without either; never the value;
  ``warnings``: its startup warnings, ``[{"code", "detail"}]``, ``occ.drivers.gateway_warnings``);
  with ``--unhealthy``, or a configuration snapshot holding
  ``{"standIn": {"healthy": false}}``, 503 ``{"status": "unhealthy", ...}`` forever (a runtime
  that never becomes ready);
* ``GET /config``: the JSON configuration snapshot it was started with, only to a caller
  that presents the revision's own credential (``Authorization: Bearer <credential>``):
  401 otherwise, and 404 for a gateway started without a credential (tenant configuration is
  never served to whoever can reach the port).

With ``--credential-stdin PATH`` (how a container receives its credential without an
environment literal) it first reads two newline-terminated lines from stdin, the credential
and the revision's fingerprint key, writes them to ``PATH`` and to ``fingerprint-key`` beside it
with mode 0600, and then uses ``PATH`` as its credential file; stdin that ends without both
lines, or not within ``--credential-timeout`` seconds, exits with status 2
before anything listens (whoever started it starts it again and delivers anew).

It binds ``--host`` (127.0.0.1 by default), logs one JSON line on start and one on stop (no
request logs, nothing secret), and exits with status 0 on SIGTERM or SIGINT. Importing this
module imports only the standard library, so a gateway starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import hmac
import http.server
import json
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from occ.drivers import gateway_warnings
from occ.foundation import fingerprints

EXIT_USAGE = 2
"""Exit status when the arguments, the configuration file or the credential are unusable."""

MAX_CREDENTIAL_BYTES = 65_536
"""Longest credential line read from stdin."""


class GatewayServer(http.server.ThreadingHTTPServer):
    """The HTTP server, carrying what the handler answers with."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        *,
        health: dict[str, Any],
        healthy: bool,
        configuration: bytes,
        credential: str | None = None,
    ) -> None:
        super().__init__(address, _Handler)
        self.health = health
        self.healthy = healthy
        self.configuration = configuration
        self.credential = credential


class _Handler(http.server.BaseHTTPRequestHandler):
    server: GatewayServer

    def version_string(self) -> str:
        return "occ-gateway"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            if self.server.healthy:
                self._send(200, json.dumps({"status": "ok", **self.server.health}).encode())
            else:
                self._send(503, json.dumps({"status": "unhealthy", **self.server.health}).encode())
        elif path == "/config":
            self._send_configuration()
        else:
            self._send(404, b'{"status": "not_found"}')

    def _send_configuration(self) -> None:
        expected = self.server.credential
        if expected is None:
            self._send(404, b'{"status": "not_found"}')
            return
        presented = self.headers.get("Authorization", "")
        if not hmac.compare_digest(presented.encode(), f"Bearer {expected}".encode()):
            self._send(401, b'{"status": "unauthorized"}')
            return
        self._send(200, self.server.configuration)

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """No request logs: a readiness probe every half second would fill the log."""


def serve(
    *,
    port: int,
    revision_id: str,
    agent_id: str,
    generation: int,
    config: Path,
    host: str = "127.0.0.1",
    unhealthy: bool = False,
    credential_file: Path | None = None,
    credential_stdin: Path | None = None,
    credential_timeout_s: float = 30.0,
) -> int:
    """Serve until SIGTERM or SIGINT; the exit status (0, or 2 for unusable input)."""
    credential_fingerprint = credential = None
    if credential_stdin is not None:
        problem = receive_credential(sys.stdin.fileno(), credential_stdin, credential_timeout_s)
        if problem is not None:
            _event("gateway.failed", revisionId=revision_id, reason=problem)
            return EXIT_USAGE
        credential_file = credential_stdin
    if credential_file is not None:
        try:
            credential = credential_file.read_text(encoding="utf-8").rstrip("\n")
            credential_fingerprint = _fingerprint(credential, credential_file)
        except OSError as exc:
            _event(
                "gateway.failed",
                revisionId=revision_id,
                reason=type(exc).__name__,
                detail="cannot read the credential file",
            )
            return EXIT_USAGE
    try:
        document = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _event(
            "gateway.failed",
            revisionId=revision_id,
            reason=type(exc).__name__,
            detail="cannot read the configuration snapshot",
        )
        return EXIT_USAGE
    warnings = gateway_warnings.of_configuration(document)
    health = {
        "revisionId": revision_id,
        "agentId": agent_id,
        "configurationGeneration": generation,
        "credentialFingerprint": credential_fingerprint,
        "warnings": warnings,
    }
    stand_in = document.get("standIn") if isinstance(document, dict) else None
    if isinstance(stand_in, dict) and stand_in.get("healthy") is False:
        unhealthy = True
    try:
        server = GatewayServer(
            (host, port),
            health=health,
            healthy=not unhealthy,
            configuration=json.dumps(document).encode(),
            credential=credential,
        )
    except OSError as exc:
        _event(
            "gateway.failed",
            revisionId=revision_id,
            port=port,
            reason=type(exc).__name__,
            detail=exc.strerror or "cannot listen",
        )
        return EXIT_USAGE
    stopping = threading.Event()

    def stop(signum: int, _frame: object) -> None:
        stopping.set()

    previous = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGINT)}
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="gateway", daemon=True
    )
    thread.start()
    _event(
        gateway_warnings.STARTED,
        revisionId=revision_id,
        agentId=agent_id,
        port=port,
        configurationGeneration=generation,
        healthy=not unhealthy,
        warnings=warnings,
    )
    try:
        while not stopping.wait(1.0):
            pass
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
        for number, handler in previous.items():
            signal.signal(number, handler)
    _event("gateway.stopped", revisionId=revision_id, port=port)
    return 0


def _fingerprint(credential: str, credential_file: Path) -> str | None:
    """The credential's fingerprint under the key beside its file; ``None`` without a key (a
    fingerprint is never shown unkeyed)."""
    try:
        key = (credential_file.parent / fingerprints.KEY_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    key = key.strip()
    return fingerprints.of(credential, key) if key else None


def receive_credential(descriptor: int, path: Path, timeout_s: float) -> str | None:
    """Read the credential line and the fingerprint key line from ``descriptor`` into ``path``
    and ``fingerprint-key`` beside it (mode 0600); a problem or ``None``.

    The value is never logged; the problem is a fixed word (``timeout``, ``incomplete``,
    ``too_long``, or the ``OSError`` class).
    """
    received = bytearray()
    deadline = time.monotonic() + timeout_s
    try:
        while received.count(b"\n") < 2:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([descriptor], [], [], remaining)[0]:
                return "timeout"
            chunk = os.read(descriptor, 4096)
            if not chunk:
                return "incomplete"
            received += chunk
            if len(received) > MAX_CREDENTIAL_BYTES:
                return "too_long"
        value, key = bytes(received).split(b"\n")[:2]
        for target, content in ((path, value), (path.parent / fingerprints.KEY_FILE, key)):
            handle = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.fchmod(handle, 0o600)
                os.write(handle, content + b"\n")
            finally:
                os.close(handle)
    except OSError as exc:
        return type(exc).__name__
    return None


def _event(event: str, **fields: Any) -> None:
    line = {"event": event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields}
    sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m occ.drivers.gateway`` (options as ``occ gateway``)."""
    arguments = argparse.ArgumentParser(
        prog="occ-gateway", description=__doc__.splitlines()[0] if __doc__ else None
    )
    arguments.add_argument("--port", type=int, required=True)
    arguments.add_argument("--revision-id", required=True)
    arguments.add_argument("--agent-id", required=True)
    arguments.add_argument("--generation", type=int, required=True)
    arguments.add_argument("--config", type=Path, required=True)
    arguments.add_argument("--host", default="127.0.0.1")
    arguments.add_argument("--unhealthy", action="store_true")
    credential = arguments.add_mutually_exclusive_group()
    credential.add_argument("--credential-file", type=Path, default=None)
    credential.add_argument("--credential-stdin", type=Path, default=None, metavar="PATH")
    arguments.add_argument("--credential-timeout", type=float, default=30.0, metavar="SECONDS")
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m occ.drivers.gateway``."""
    options = parser().parse_args(argv)
    if not 0 < options.port < 65536:
        parser().error("--port must be between 1 and 65535")
    return serve(
        port=options.port,
        revision_id=options.revision_id,
        agent_id=options.agent_id,
        generation=options.generation,
        config=options.config,
        host=options.host,
        unhealthy=options.unhealthy,
        credential_file=options.credential_file,
        credential_stdin=options.credential_stdin,
        credential_timeout_s=options.credential_timeout,
    )


if __name__ == "__main__":
    sys.exit(main())
