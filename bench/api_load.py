"""Load on the API for its benchmarks: keep-alive clients, a request looped from several
threads for a measured window after a warm-up, and the figures of one or more windows."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.support import percentile

REQUEST_TIMEOUT_S = 30.0


@dataclass
class Tally:
    """One client thread's measurements."""

    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


@dataclass(frozen=True)
class Sample:
    """What one measured window saw: latencies of the expected answers, errors, its length."""

    latencies: list[float]
    errors: dict[str, int]
    duration_s: float


@dataclass(frozen=True)
class Figures:
    per_s: float
    p50_ms: float
    p99_ms: float
    count: int
    errors: dict[str, int]

    @classmethod
    def of(cls, *samples: Sample) -> Figures:
        """The figures of one or more windows of the same loop, taken as one."""
        latencies = sorted(value for sample in samples for value in sample.latencies)
        errors: dict[str, int] = {}
        for sample in samples:
            for what, count in sample.errors.items():
                errors[what] = errors.get(what, 0) + count
        return cls(
            per_s=len(latencies) / sum(sample.duration_s for sample in samples),
            p50_ms=percentile(latencies, 0.50) * 1000,
            p99_ms=percentile(latencies, 0.99) * 1000,
            count=len(latencies),
            errors=errors,
        )


class Client:
    """One keep-alive connection; reconnects once if the server closed it."""

    def __init__(self, port: int, key: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
        self.connection = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        headers = dict(self.headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=payload, headers=headers)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.connection.close()
                self.connection = self._connect()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def json(self, method: str, path: str, body: Any = None, *, expect: int) -> Any:
        status, raw = self.request(method, path, body)
        if status != expect:
            raise RuntimeError(f"{method} {path} answered {status}: {raw[:500]!r}")
        return json.loads(raw)["data"]

    def close(self) -> None:
        self.connection.close()


def measure(
    port: int,
    key: str,
    *,
    threads: int,
    warmup_s: float,
    duration_s: float,
    request: Callable[[Client, int], tuple[str, str]],
    expect: int,
) -> Sample:
    """``threads`` threads loop ``request`` (method, path for thread i) for the duration."""
    tallies = [Tally() for _ in range(threads)]
    start = threading.Barrier(threads + 1)
    clock: dict[str, float] = {}

    def loop(index: int) -> None:
        client = Client(port, key)
        tally = tallies[index]
        start.wait()
        try:
            while time.perf_counter() < clock["end"]:
                method, path = request(client, index)
                began = time.perf_counter()
                try:
                    status, _ = client.request(method, path)
                except OSError as exc:
                    tally.error(type(exc).__name__)
                    continue
                finished = time.perf_counter()
                if status != expect:
                    tally.error(str(status))
                elif began >= clock["measure"]:
                    tally.latencies.append(finished - began)
        finally:
            client.close()

    workers = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(threads)]
    for worker in workers:
        worker.start()
    now = time.perf_counter()
    clock["measure"] = now + warmup_s
    clock["end"] = clock["measure"] + duration_s
    start.wait()
    for worker in workers:
        worker.join()
    errors: dict[str, int] = {}
    for tally in tallies:
        for what, count in tally.errors.items():
            errors[what] = errors.get(what, 0) + count
    latencies = [value for tally in tallies for value in tally.latencies]
    return Sample(latencies=latencies, errors=errors, duration_s=duration_s)
