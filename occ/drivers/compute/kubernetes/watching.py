"""One kind kept current in the observation cache: list it, then watch it, forever.

A ``Reflector`` lists its kind in every namespace (or in one: a tenant-scoped installation
has one per managed namespace) page by page and stores what it found, then
watches from the list's resourceVersion: ``ADDED``/``MODIFIED`` store a record, ``DELETED``
drops one, ``BOOKMARK`` only moves the version on. Each watch asks the server to end it after
a session of ``session_s`` (drawn at random between its bounds, as client-go does, so
reconnections spread out), and then the next one starts where it stopped. A stream that
breaks (refused, reset, silent past its read timeout, an error event) is watched again from
the last version after a backoff; a version or continue token the server no longer keeps
(410 ``Expired``) is answered by listing again (at once the first time, then with backoff).
Every answer from the cluster refreshes the kind's proof of life in the cache. It runs in the
informer's thread until ``stop`` is set.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import urllib3

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import cache, client, failures, kinds, watched
from occ.telemetry import observability

PAGE_SIZE: Final = 500
"""Objects per list page (client-go's pager uses the same)."""
MIN_SESSION_S: Final = 1.0
"""A watch that ends sooner without an event counts as broken (backoff, not a hot loop)."""


@dataclass(frozen=True)
class Timing:
    """How long watches last and how long a reflector waits after a failure."""

    session_s: tuple[int, int] = (30, 45)
    """Bounds of one watch's ``timeoutSeconds``: sessions end and start again this often."""
    backoff_s: tuple[float, float] = (0.5, 30.0)
    """First and longest wait after a failure (doubling in between, plus up to 25 %)."""


TIMING: Final = Timing()


class StreamBroken(Exception):
    """A watch stream ended in an error event or an answer that is not a watch event."""


_EXPECTED: Final = (
    base.DriverError,
    StreamBroken,
    urllib3.exceptions.HTTPError,
    OSError,
    ValueError,
)
"""What a cluster, a network or a stream can do to a reflector (logged without a traceback)."""


class Reflector:
    """Lists and watches one kind into the cache (``run`` is a thread's target)."""

    def __init__(
        self,
        api: client.KubernetesApi,
        kind: watched.Watched,
        store: cache.ObjectCache,
        stop: threading.Event,
        *,
        timing: Timing = TIMING,
        draw: Callable[[], float] = random.random,
        namespace: str | None = None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.watched = kind
        self.store = store
        self.stop = stop
        self.timing = timing
        self._draw = draw
        self._response: Any = None
        self._response_lock = threading.Lock()

    @property
    def kind(self) -> kinds.Kind:
        return self.watched.kind

    def run(self) -> None:
        """List, then watch from the last version, until ``stop``; 410 lists again."""
        version: str | None = None
        failures_in_a_row = 0
        while not self.stop.is_set():
            try:
                if version is None:
                    version = self._list()
                version = self._watch(version)
                failures_in_a_row = 0
            except failures.Expired:
                _log("compute.kubernetes-watch-expired", logging.INFO, self.kind)
                version = None  # list again: the cache keeps serving meanwhile
                failures_in_a_row += 1
                if failures_in_a_row > 1:  # expired again before a watch went well: no spin
                    self.stop.wait(self._backoff(failures_in_a_row - 1))
            except Exception as exc:  # back off, then watch again (a bug: with its traceback)
                if self.stop.is_set():
                    return
                failures_in_a_row += 1
                delay_s = self._backoff(failures_in_a_row)
                _log(
                    "compute.kubernetes-watch-failed",
                    logging.WARNING,
                    self.kind,
                    code=getattr(exc, "code", failures.UNAVAILABLE),
                    error=type(exc).__name__,
                    delayMs=round(delay_s * 1000),
                    exc_info=None if isinstance(exc, _EXPECTED) else exc,
                )
                self.stop.wait(delay_s)

    def interrupt(self) -> None:
        """Break the open watch now (the thread then sees ``stop``)."""
        with self._response_lock:
            response = self._response
        if response is not None:
            with contextlib.suppress(Exception):  # already closed, or closing as we speak
                response.shutdown()

    def _backoff(self, failures_in_a_row: int) -> float:
        first, longest = self.timing.backoff_s
        delay_s = min(longest, first * 2.0 ** (failures_in_a_row - 1))
        return delay_s * (1 + 0.25 * self._draw())

    def _list(self) -> str:
        """Every object of the kind, page by page, into the cache; the list's version."""
        started = time.monotonic()
        records: list[client.Wire] = []
        resume: str | None = None
        version = ""
        while not self.stop.is_set():
            page = self.api.list_page(
                self.kind,
                watched.SELECTOR,
                limit=PAGE_SIZE,
                resume=resume,
                metadata_only=self.watched.metadata_only,
                namespace=self.namespace,
            )
            version = version or page.resource_version
            records.extend(self.watched.keep(item) for item in page.items)
            if page.resume is None:
                self.store.replace(self.kind, records, self.namespace)
                _log(
                    "compute.kubernetes-cache-listed",
                    logging.DEBUG,
                    self.kind,
                    count=len(records),
                    durationMs=round((time.monotonic() - started) * 1000),
                )
                break
            resume = page.resume
        return version

    def _watch(self, version: str) -> str:
        """One watch session from ``version``; the version it reached when it ended."""
        low, high = self.timing.session_s
        session_s = low + round((high - low) * self._draw())
        started = time.monotonic()
        response = self.api.watch(
            self.kind,
            watched.SELECTOR,
            resource_version=version,
            timeout_s=session_s,
            metadata_only=self.watched.metadata_only,
            namespace=self.namespace,
        )
        with self._response_lock:
            self._response = response
            # a stop whose interrupt came while the watch was being opened found no response
            # to break: seen here, under the lock the interrupt takes after setting stop
            stopping = self.stop.is_set()
        events = 0
        ended = False
        try:
            if stopping:
                return version
            self.store.alive(self.kind, self.namespace)
            for line in _lines(response):
                if self.stop.is_set():
                    return version
                version = self._apply(json.loads(line), version)
                events += 1
                self.store.alive(self.kind, self.namespace)
            ended = not self.stop.is_set()
        finally:
            with self._response_lock:
                self._response = None
            with contextlib.suppress(Exception):  # a connection is reused only after a clean end
                if ended:
                    response.release_conn()
                else:
                    response.close()
        if events == 0 and time.monotonic() - started < MIN_SESSION_S:
            # a server (or a proxy) that ends watches at once must not make this loop spin
            raise StreamBroken(f"watch {self.kind.kind}: ended at once without an event")
        return version

    def _apply(self, event: Any, version: str) -> str:
        """One event into the cache; the version it brings."""
        if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
            raise StreamBroken(f"watch {self.kind.kind}: not a watch event")
        kind, obj = event.get("type"), event["object"]
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise failures.Expired(f"watch {self.kind.kind}: HTTP 410 Expired")
            raise StreamBroken(f"watch {self.kind.kind}: error event {obj.get('code')}")
        found = (obj.get("metadata") or {}).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            self.store.put(self.kind, self.watched.keep(obj))
        elif kind == "DELETED":
            self.store.drop(self.kind, self.watched.keep(obj))
        elif kind != "BOOKMARK":
            raise StreamBroken(f"watch {self.kind.kind}: unknown event {kind!r}")
        return str(found) if found else version


def _lines(response: Any) -> Iterator[bytes]:
    """The JSON lines of a watch stream, as they arrive."""
    pending = b""
    for chunk in response.stream(None, decode_content=False):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line for line in complete if line.strip())
    if pending.strip():
        yield pending


def _log(
    event: str,
    level: int,
    kind: kinds.Kind,
    exc_info: BaseException | None = None,
    **fields: Any,
) -> None:
    observability.log(
        event, level=level, exc_info=exc_info, operation=f"watch {kind.kind}", **fields
    )
