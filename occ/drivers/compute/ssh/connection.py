"""SSH connections to the pool's hosts: commands and tunnels, from synchronous code.

The only module that imports ``asyncssh``. One event loop runs on a daemon thread per driver;
each call submits a coroutine and waits for it while watching the operation's abort event,
so an aborted pass stops waiting at once. One connection per host is kept and reopened when
it drops. Authentication is the host's private key only (no agent, no ``~/.ssh/config``), and
the server must present exactly the pinned host key.

Failures are classified here: a host that cannot be reached, refuses the login or times out
is ``TransientDriverError("SSH_HOST_UNREACHABLE")`` (the work waits for it); a server whose key
differs from the pinned one is ``PermanentDriverError("SSH_HOST_KEY_MISMATCH")``. Messages
name the host, never a command's input (which may carry a credential).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import asyncssh

from occ.drivers.compute import base
from occ.drivers.compute.ssh import hosts

UNREACHABLE: Final = "SSH_HOST_UNREACHABLE"
KEY_MISMATCH: Final = "SSH_HOST_KEY_MISMATCH"
_HTTP_LIMIT: Final = 65_536

T = TypeVar("T")


@dataclass(frozen=True)
class Completed:
    """A remote command's exit status and output (text)."""

    status: int
    stdout: str
    stderr: str


class Connections:
    """Connections to the pool's hosts, with a counter of commands run per host."""

    def __init__(self, *, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.commands: dict[str, int] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="occ-ssh", daemon=True)
        self._thread.start()
        self._open: dict[str, asyncssh.SSHClientConnection] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close every connection and stop the loop."""
        if self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(self.timeout_s)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.timeout_s)
        self._loop.close()

    def run(
        self, operation: base.Operation, host: hosts.Host, command: str, *, stdin: str = ""
    ) -> Completed:
        """Run ``command`` on ``host`` with ``stdin``; its result (any exit status)."""
        operation.check()
        with self._lock:
            self.commands[host.name] = self.commands.get(host.name, 0) + 1
        return self._wait(operation, host, self._run(host, command, stdin))

    def get(self, operation: base.Operation, host: hosts.Host, port: int, path: str) -> bytes:
        """One HTTP ``GET path`` to ``127.0.0.1:port`` on ``host`` through a tunnel; the raw
        response (status line, headers and body, at most 64 KiB)."""
        operation.check()
        return self._wait(operation, host, self._get(host, port, path))

    # -- the loop's side ----------------------------------------------------------------

    def _wait(
        self, operation: base.Operation, host: hosts.Host, coroutine: Coroutine[Any, Any, T]
    ) -> T:
        operation.check()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(coroutine, self.timeout_s), self._loop
        )
        while True:
            try:
                return future.result(timeout=0.05)
            except TimeoutError:
                if future.done():  # the call itself timed out (asyncio's is the same class)
                    self._forget(host)
                    raise base.TransientDriverError(
                        UNREACHABLE, f"host {host.name}: no answer in {self.timeout_s:g} s"
                    ) from None
                if operation.abort.is_set() or not operation.leased():
                    future.cancel()
                    raise base.Aborted(operation.work_id) from None
            except asyncssh.HostKeyNotVerifiable:
                raise base.PermanentDriverError(
                    KEY_MISMATCH, f"host {host.name} did not present its pinned host key"
                ) from None
            except (OSError, asyncssh.Error) as exc:
                self._forget(host)
                raise base.TransientDriverError(
                    UNREACHABLE, f"host {host.name}: {type(exc).__name__}"
                ) from None

    async def _connection(self, host: hosts.Host) -> asyncssh.SSHClientConnection:
        found = self._open.get(host.name)
        if found is not None and not found.is_closed():
            return found
        connection = await asyncssh.connect(
            host.host,
            port=host.port,
            username=host.user,
            client_keys=[asyncssh.read_private_key(str(host.private_key_file))],
            known_hosts=([asyncssh.import_public_key(host.host_key)], [], []),
            agent_path=None,
            config=None,
            connect_timeout=self.timeout_s,
            keepalive_interval=15,
        )
        self._open[host.name] = connection
        return connection

    async def _run(self, host: hosts.Host, command: str, stdin: str) -> Completed:
        connection = await self._connection(host)
        result = await connection.run(command, input=stdin, check=False)
        return Completed(
            status=int(result.exit_status if result.exit_status is not None else 255),
            stdout=str(result.stdout or ""),
            stderr=str(result.stderr or ""),
        )

    async def _get(self, host: hosts.Host, port: int, path: str) -> bytes:
        connection = await self._connection(host)
        reader, writer = await connection.open_connection("127.0.0.1", port, encoding=None)
        try:
            writer.write(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            writer.write_eof()
            response: bytes = await reader.read(_HTTP_LIMIT)
            return response
        finally:
            writer.close()

    async def _close_all(self) -> None:
        for connection in list(self._open.values()):
            connection.close()
            await connection.wait_closed()
        self._open.clear()

    def _forget(self, host: hosts.Host) -> None:
        """Drop the host's connection (on the loop, which owns the table)."""

        def drop() -> None:
            connection = self._open.pop(host.name, None)
            if connection is not None:
                connection.close()

        self._loop.call_soon_threadsafe(drop)
