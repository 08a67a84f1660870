"""The HTTP face of the fake Kubernetes API server: framing, connections, faults, streams.

Serves the dispatcher's answers on a stdlib ``ThreadingHTTPServer`` speaking HTTP/1.1 with
keep-alive: one JSON body per answer, or for a watch a chunked stream of JSON lines (one
``{"type", "object"}`` event per line, as the apiserver sends them), or a Pod log as text
(chunked while followed), after the scripted
faults had their say. It tracks connections so a stop (or ``cut_watches``) breaks them as a
vanishing apiserver would. It must not decide answers: that is the dispatcher's.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

from tests.support.kube_api import (
    dispatch,
    errors,
    faults,
    patches,
    pod_logs,
    resources,
    store,
    watches,
)

Obj = resources.Obj
Answer = dispatch.Answer


class KubeHTTPServer(ThreadingHTTPServer):
    """The listening server; handlers reach the dispatcher, faults and journal through it.

    It tracks open connections so that stopping it also cuts keep-alive connections, as an
    apiserver that goes away would (``shutdown`` alone leaves them served), and the ones that
    stream a watch, so that ``cut_watches`` can break just those.
    """

    daemon_threads = True

    def __init__(
        self,
        dispatcher: dispatch.Dispatcher,
        objects: store.Store,
        scripted: faults.Faults,
        journal: faults.Journal,
        port: int = 0,
    ) -> None:
        self.dispatcher = dispatcher
        self.objects = objects
        self.faults = scripted
        self.journal = journal
        self.bookmark_interval_s: float | None = None
        self.stopping = threading.Event()
        self._connections_lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._watches: dict[socket.socket, threading.Event] = {}
        super().__init__(("127.0.0.1", port), _Handler)

    def opened(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.discard(connection)

    def cut_connections(self) -> None:
        self.stopping.set()
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self.objects.history.wake()

    def watching(self, connection: socket.socket) -> threading.Event:
        """Register a connection that streams a watch; the event is set when it is cut."""
        cut = threading.Event()
        with self._connections_lock:
            self._watches[connection] = cut
        return cut

    def unwatched(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._watches.pop(connection, None)

    def cut_watches(self) -> int:
        """Break every connection streaming a watch now; how many there were."""
        with self._connections_lock:
            streams = list(self._watches.items())
        for connection, cut in streams:
            cut.set()
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self.objects.history.wake()
        return len(streams)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One write per answer and no Nagle delay: otherwise every keep-alive round trip waits
    # for a delayed ACK between the header and body segments.
    disable_nagle_algorithm = True
    wbufsize = 1 << 16
    server: KubeHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.opened(self.connection)

    def handle(self) -> None:
        with contextlib.suppress(OSError):  # a connection cut by a fault or a stop: no bug
            super().handle()

    def finish(self) -> None:
        self.server.closed(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        return  # the journal is the log; stderr noise would bury test output

    def _serve(self, method: str) -> None:
        split = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        header = self.headers.get("Content-Type")
        content_type = header.split(";", 1)[0].strip().lower() if header else None
        parse_error: errors.ApiError | None = None
        try:
            body = patches.parse_body(raw, content_type)
        except (ValueError, yaml.YAMLError) as error:
            body, parse_error = None, errors.bad_request(f"the request body is malformed: {error}")
        request = faults.Request(method, split.path, query, content_type, body)
        ticket = self.server.journal.record(request)
        fault = self.server.faults.take(method, split.path)
        if fault is not None and fault.delay_s:
            time.sleep(fault.delay_s)
        if fault is not None and fault.close:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None and fault.status is not None:
            code = fault.status
            injected = errors.ApiError(
                code,
                fault.reason or faults.default_reason(code),
                "injected fault",
                headers={"Retry-After": str(fault.retry_after)} if fault.retry_after else {},
            )
            answer: Answer = (code, injected.status(), injected.headers)
        else:
            answered = self._answer(request, parse_error)
            if isinstance(answered, watches.Watch):
                self.server.journal.answered(ticket, 200)
                self._stream(answered)
                return
            if isinstance(answered, pod_logs.Read):
                self.server.journal.answered(ticket, 200)
                self._log(answered)
                return
            answer = answered
        # Journal first: a client that has read the answer must find it recorded.
        self.server.journal.answered(ticket, answer[0])
        self._send(*answer)

    def _answer(
        self, request: faults.Request, parse_error: errors.ApiError | None
    ) -> Answer | watches.Watch | pod_logs.Read:
        try:
            if parse_error is not None:
                raise parse_error
            return self.server.dispatcher.dispatch(
                request,
                self.headers.get("Authorization"),
                self.headers.get("User-Agent") or "",
                self.headers.get("Accept"),
            )
        except errors.ApiError as error:
            return error.code, error.status(), error.headers
        except Exception as error:  # a bug in the fake: say so loudly, answer like the real 500
            traceback.print_exc(file=sys.stderr)
            failure = errors.ApiError(500, "InternalError", f"fake apiserver bug: {error!r}")
            return 500, failure.status(), {}

    def _send(self, code: int, payload: Obj, headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its read timed out)

    def _client_gone(self) -> bool:
        """Whether the client closed its end (a real apiserver ends the watch then too)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _log(self, read: pod_logs.Read) -> None:
        """A Pod log as plain text: whole, or chunked line by line while it is followed."""
        server = self.server
        stopped = lambda: server.stopping.is_set() or self._client_gone()  # noqa: E731
        lines = server.dispatcher.logs.lines(read, stopped)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            if not read.follow:
                data = "".join(f"{line}\n" for line in lines).encode()[: read.limit_bytes]
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            left = read.limit_bytes
            for line in lines:
                data = f"{line}\n".encode()[:left]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if left is not None:
                    left -= len(data)
                    if left <= 0:  # the limit: the answer ends
                        self.wfile.write(b"0\r\n\r\n")
                        break
            self.close_connection = True
        except OSError:
            self.close_connection = True  # the client went away

    def _stream(self, watch: watches.Watch) -> None:
        """A watch's events as a chunked stream of JSON lines, until it ends or is cut."""
        server = self.server
        cut = server.watching(self.connection)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            for event in watches.events(
                server.objects,
                watch,
                stopped=lambda: cut.is_set() or server.stopping.is_set() or self._client_gone(),
                bookmark_interval_s=server.bookmark_interval_s,
            ):
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
            if cut.is_set() or server.stopping.is_set():
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client went away, or the watch was cut
        finally:
            server.unwatched(self.connection)
