"""The fake apiserver's Pod logs: lines a test writes, read as the ``pods/log`` subresource.

Models ``GET /api/v1/namespaces/<ns>/pods/<name>/log`` with ``container`` (required when the
Pod has more than one), ``tailLines``, ``sinceSeconds``, ``limitBytes`` (the answer ends after
that many bytes, mid-line if need be) and ``follow`` (the answer stays open and new lines
arrive as they are written, until the client leaves or the server stops). The log of a
container is the lines written for it, each with the time it was written, since it last
started (``restart``); a Pod that goes keeps nothing (its log is gone with it). It must not
speak HTTP: the server streams.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tests.support.kube_api import errors, resources

Obj = resources.Obj
Key = tuple[str, str, str]


@dataclass(frozen=True)
class Read:
    """One log request, as the dispatcher understood it."""

    key: Key
    tail_lines: int | None
    since_seconds: int | None
    follow: bool
    limit_bytes: int | None = None


class PodLogs:
    """Every container's log lines, written by tests."""

    def __init__(self) -> None:
        self._lines: dict[Key, list[tuple[float, str]]] = {}
        self._changed = threading.Condition()

    def write(self, namespace: str, pod: str, container: str, line: str) -> None:
        with self._changed:
            self._lines.setdefault((namespace, pod, container), []).append((time.time(), line))
            self._changed.notify_all()

    def restart(self, namespace: str, pod: str, container: str, lines: list[str]) -> None:
        """The container starts (again): its log is ``lines`` alone."""
        with self._changed:
            now = time.time()
            self._lines[(namespace, pod, container)] = [(now, line) for line in lines]
            self._changed.notify_all()

    def clear(self) -> None:
        with self._changed:
            self._lines.clear()
            self._changed.notify_all()

    def request(self, pod: Obj, query: dict[str, list[str]]) -> Read:
        """The read ``query`` asks of ``pod``; the apiserver's 400 for a bad parameter."""
        containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        container = _last(query, "container")
        metadata = pod["metadata"]
        if container is None:
            if len(containers) != 1:
                raise errors.bad_request(
                    f"a container name must be specified for pod {metadata['name']}, choose one"
                    f" of: {containers}"
                )
            container = containers[0]
        elif container not in containers:
            raise errors.bad_request(
                f"container {container} is not valid for pod {metadata['name']}"
            )
        return Read(
            (metadata["namespace"], metadata["name"], container),
            _number(query, "tailLines", minimum=0),
            _number(query, "sinceSeconds", minimum=1),
            (_last(query, "follow") or "").lower() == "true",
            _number(query, "limitBytes", minimum=1),
        )

    def lines(self, read: Read, stopped: Callable[[], bool]) -> Iterator[str]:
        """The lines ``read`` answers; following, new ones until ``stopped()``."""
        with self._changed:
            written = list(self._lines.get(read.key, []))
        if read.since_seconds is not None:
            oldest = time.time() - read.since_seconds
            written = [entry for entry in written if entry[0] >= oldest]
        if read.tail_lines is not None:
            written = written[len(written) - read.tail_lines :] if read.tail_lines else []
        yield from (line for _, line in written)
        if not read.follow:
            return
        with self._changed:
            seen = len(self._lines.get(read.key, []))
        while not stopped():
            with self._changed:
                self._changed.wait(0.05)
                now = self._lines.get(read.key, [])
                fresh, seen = now[seen:], len(now)
            yield from (line for _, line in fresh)


def _last(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _number(query: dict[str, list[str]], name: str, *, minimum: int) -> int | None:
    raw = _last(query, name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise errors.bad_request(f"{name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise errors.invalid("PodLogOptions", "", [f"{name}: Invalid value: must be >= {minimum}"])
    return value
