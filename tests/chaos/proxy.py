"""A TCP proxy that can go silent: it stops reading in both directions and keeps every socket.

While silent, bytes wait in the kernel's buffers on both sides and nothing is refused or reset:
to the workers behind it, PostgreSQL looks hung (a partition that drops packets), not down.
A peer that closes its side ends the connection on the other side too.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading

from tests.support import servers

_CHUNK = 65536


class SilentProxy:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:upstream_port`` until ``close``."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = servers.free_port()
        self.silent = threading.Event()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(0.2)
        self.connections = 0
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
                self.connections += 1
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        peers = {client: upstream, upstream: client}
        try:
            while not self._closed.is_set():
                if self.silent.is_set():
                    self._closed.wait(0.02)  # hold everything: read nothing, close nothing
                    continue
                readable, _, _ = select.select(list(peers), [], [], 0.1)
                for source in readable:
                    data = source.recv(_CHUNK)
                    if not data:
                        return
                    peers[source].sendall(data)
        except OSError:
            return
        finally:
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()
