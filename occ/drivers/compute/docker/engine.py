"""The Docker Engine adapter: the only occ module that imports the ``docker`` SDK.

It creates the SDK client lazily (the constructor already talks to the engine) and again in
a forked child, and turns every SDK failure into occ's driver errors: an unreachable or busy
engine is a ``TransientDriverError``, a refused request a ``PermanentDriverError``, and the
answers a caller acts on are exceptions of their own (``NotFound``, ``Conflict``,
``Forbidden``). Results are the engine's plain JSON documents (``dict``), never SDK objects.

It knows nothing about occ's names, labels or lifecycle, and it never logs.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

import docker
import docker.errors
import requests.exceptions

from occ.drivers.compute import base

UNAVAILABLE: Final = "DOCKER_ENGINE_UNAVAILABLE"
"""Code of a transient failure: the engine did not answer, or answered with a server error."""

REJECTED: Final = "DOCKER_REQUEST_REJECTED"
"""Code of a permanent failure: the engine refused a request as invalid."""


class NotFound(Exception):
    """The engine has no such object (HTTP 404)."""


class Conflict(Exception):
    """The name is taken, or the object is in a state that forbids the request (HTTP 409)."""


class Forbidden(Exception):
    """The engine refused the operation on this object (HTTP 403), such as removing a network
    that still has endpoints."""


class Engine:
    """One Docker Engine, reached through the SDK with a per-request timeout."""

    def __init__(self, base_url: str | None, *, timeout_s: float) -> None:
        """``base_url`` (``unix://...``, ``tcp://...``); ``None`` lets the SDK read
        ``DOCKER_HOST`` (else the default socket)."""
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._client: Any = None
        self._client_pid: int | None = None
        self._lock = threading.Lock()

    # -- engine ---------------------------------------------------------------------------

    def ping(self) -> None:
        with _translated():
            if self._api().ping() is not True:
                raise base.TransientDriverError(UNAVAILABLE, "the engine did not answer OK")

    def version(self) -> Mapping[str, Any]:
        return self._document(lambda api: api.version())

    def image(self, name: str) -> Mapping[str, Any] | None:
        with contextlib.suppress(NotFound):
            return self._document(lambda api: api.inspect_image(name))
        return None

    # -- networks -------------------------------------------------------------------------

    def networks(
        self, *, labels: Sequence[str] = (), name: str | None = None
    ) -> list[dict[str, Any]]:
        """Networks matching every label filter (``k`` or ``k=v``); ``name`` is the engine's
        substring filter, so callers compare names exactly."""
        filters: dict[str, Any] = {}
        if labels:
            filters["label"] = list(labels)
        if name is not None:
            filters["name"] = [name]
        with _translated():
            found: list[dict[str, Any]] = self._api().networks(filters=filters)
            return found

    def network(self, network_id: str) -> dict[str, Any]:
        return self._document(lambda api: api.inspect_network(network_id))

    def create_network(self, name: str, labels: Mapping[str, str]) -> str:
        """The new bridge network's id; ``Conflict`` when the name is taken."""
        with _translated():
            created = self._api().create_network(
                name, driver="bridge", labels=dict(labels), check_duplicate=True
            )
            return str(created["Id"])

    def remove_network(self, network_id: str) -> None:
        """Remove; a network already gone is fine; ``Forbidden`` while endpoints remain."""
        with contextlib.suppress(NotFound), _translated():
            self._api().remove_network(network_id)

    def connect(self, network_id: str, container_id: str, aliases: Sequence[str]) -> None:
        with _translated():
            self._api().connect_container_to_network(
                container_id, network_id, aliases=list(aliases)
            )

    def disconnect(self, network_id: str, container_id: str) -> None:
        with contextlib.suppress(NotFound), _translated():
            self._api().disconnect_container_from_network(container_id, network_id, force=True)

    # -- containers -----------------------------------------------------------------------

    def containers(self, labels: Sequence[str]) -> list[dict[str, Any]]:
        """Every container (running or not) matching every label filter."""
        with _translated():
            found: list[dict[str, Any]] = self._api().containers(
                all=True, filters={"label": list(labels)}
            )
            return found

    def container(self, name_or_id: str) -> dict[str, Any]:
        """The container's inspect document; ``NotFound`` when there is none."""
        return self._document(lambda api: api.inspect_container(name_or_id))

    def logs(
        self, name_or_id: str, *, tail: int | None, since: float | None, follow_s: float | None
    ) -> tuple[Iterator[bytes], Callable[[], None]]:
        """The container's output (stdout and stderr) as chunks, and how to end it; following
        for ``follow_s`` when given, on a client of its own (``NotFound`` without the
        container)."""
        timeout = self.timeout_s + (follow_s or 0.0)
        with _translated():
            if self.base_url:
                client = docker.DockerClient(base_url=self.base_url, timeout=timeout)
            else:
                client = docker.from_env(timeout=timeout)
            try:
                stream = client.api.logs(
                    name_or_id,
                    stream=True,
                    follow=follow_s is not None,
                    tail="all" if tail is None else tail,
                    since=since,
                )
            except BaseException:
                client.close()
                raise

        def close() -> None:
            with contextlib.suppress(Exception):  # closing a stream cut midway may complain
                stream.close()
            with contextlib.suppress(Exception):
                client.close()

        def chunks() -> Iterator[bytes]:
            try:
                yield from stream
            except (docker.errors.DockerException, requests.exceptions.RequestException, OSError):
                return  # closed (a deadline, the caller left) or cut: the stream ends
            except AttributeError:
                return  # the SDK reading a response that ``close`` already released
            finally:
                close()

        return chunks(), close

    def create_container(
        self,
        *,
        host_config: Mapping[str, Any],
        networking: Mapping[str, Sequence[str]] | None = None,
        **config: Any,
    ) -> str:
        """Create a container; ``host_config`` and ``networking`` (network -> aliases) are
        built here, ``config`` goes to the SDK's ``create_container`` unchanged."""
        with _translated():
            api = self._api()
            networking_config = None
            if networking:
                networking_config = api.create_networking_config(
                    {
                        network: api.create_endpoint_config(aliases=list(aliases))
                        for network, aliases in networking.items()
                    }
                )
            created = api.create_container(
                host_config=api.create_host_config(**host_config),
                networking_config=networking_config,
                use_config_proxy=False,
                **config,
            )
            return str(created["Id"])

    def start(self, container_id: str, *, stdin: bytes | None = None) -> None:
        """Start the container; with ``stdin``, attach to its standard input first and write
        ``stdin`` to it once it runs, then close it (the process sees end of input)."""
        with _translated():
            api = self._api()
            if stdin is None:
                api.start(container_id)
                return
            attached = api.attach_socket(container_id, params={"stdin": 1, "stream": 1})
            raw: socket.socket = getattr(attached, "_sock", attached)
            try:
                api.start(container_id)
                raw.sendall(stdin)
            finally:
                with contextlib.suppress(OSError):
                    raw.shutdown(socket.SHUT_WR)
                attached.close()

    def stop(self, container_id: str, *, timeout_s: int) -> None:
        with contextlib.suppress(NotFound), _translated():
            self._api().stop(container_id, timeout=timeout_s)

    def unpause(self, container_id: str) -> None:
        with _translated():
            self._api().unpause(container_id)

    def remove_container(self, container_id: str) -> None:
        """Remove (running or not) with its anonymous volumes; already gone is fine."""
        with contextlib.suppress(NotFound), _translated():
            self._api().remove_container(container_id, force=True, v=True)

    def put_archive(self, container_id: str, path: str, archive: bytes) -> None:
        with _translated():
            if not self._api().put_archive(container_id, path, archive):
                raise base.TransientDriverError(UNAVAILABLE, "the engine did not store the files")

    # -- volumes --------------------------------------------------------------------------

    def volumes(self, labels: Sequence[str]) -> list[dict[str, Any]]:
        with _translated():
            found = self._api().volumes(filters={"label": list(labels)})
            return list((found or {}).get("Volumes") or [])

    def volume(self, name: str) -> dict[str, Any]:
        return self._document(lambda api: api.inspect_volume(name))

    def create_volume(self, name: str, labels: Mapping[str, str]) -> None:
        with _translated():
            self._api().create_volume(name, driver="local", labels=dict(labels))

    def remove_volume(self, name: str) -> None:
        with contextlib.suppress(NotFound), _translated():
            self._api().remove_volume(name, force=True)

    # -- the client -----------------------------------------------------------------------

    def _document(self, read: Callable[[Any], Any]) -> dict[str, Any]:
        """The JSON document ``read`` answers through the SDK's low-level client."""
        with _translated():
            document: dict[str, Any] = read(self._api())
            return document

    def _api(self) -> Any:
        """The SDK's low-level client, created on first use (and again after a fork)."""
        with self._lock:
            if self._client is None or self._client_pid != os.getpid():
                if self.base_url:
                    client = docker.DockerClient(base_url=self.base_url, timeout=self.timeout_s)
                else:
                    client = docker.from_env(timeout=self.timeout_s)
                self._client, self._client_pid = client, os.getpid()
            return self._client.api

    def close(self) -> None:
        """Close the client's connections (a later call creates a new client)."""
        with self._lock:
            if self._client is not None and self._client_pid == os.getpid():
                with contextlib.suppress(docker.errors.DockerException, OSError):
                    self._client.close()
            self._client = None


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """SDK and transport failures as occ's driver errors (or ``NotFound``/``Conflict``/...).

    Removals enter ``contextlib.suppress(NotFound)`` before this, so that an object already
    gone is simply done."""
    try:
        yield
    except docker.errors.NotFound as exc:
        raise NotFound(_explanation(exc)) from None
    except docker.errors.APIError as exc:
        status = exc.status_code or 0
        if status == 409:
            raise Conflict(_explanation(exc)) from None
        if status == 403:
            raise Forbidden(_explanation(exc)) from None
        error: base.DriverError
        if status >= 500 or status in (408, 429) or status == 0:
            error = base.TransientDriverError(UNAVAILABLE, f"engine status {status}")
        else:
            reason = f"engine status {status}: {_explanation(exc)}"
            error = base.PermanentDriverError(REJECTED, reason)
        error.status = status or None  # the engine's HTTP status, for the pass's cause
        raise error from None
    except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
        raise base.TransientDriverError(UNAVAILABLE, type(exc).__name__) from None


def _explanation(exc: docker.errors.APIError) -> str:
    """The engine's one-line message, bounded (it names objects, never request bodies)."""
    text = str(exc.explanation or "")
    if not text.strip() and exc.response is not None:
        text = str(exc.response.reason or "")
    return text.strip().splitlines()[0][:300] if text.strip() else type(exc).__name__


def version_tuple(text: str) -> tuple[int, ...]:
    """An API version such as ``1.45`` as numbers (``(0,)`` when it is not one)."""
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return (0,)
