"""The baseline of the end-to-end benchmark: plain Celery no-op tasks (``bench/noop_app.py``)
on two prefork worker processes of the same fleet, same broker and flags, timed from the first
publish until the counter says every task ran."""

from __future__ import annotations

import time
from typing import Final

import redis

from bench import noop_app, process_cpu
from bench.support import BenchError
from bench.workers import POLL_S, Fleet
from occ.settings.config import Settings

NOOP_APP: Final = "bench.noop_app"


class PlainCelery:
    """The baseline: ``noop_app``'s two worker processes, started once, run in slices."""

    def __init__(
        self,
        env: dict[str, str],
        fleet: Fleet,
        counter: redis.Redis,
        *,
        warmup_items: int,
        timeout_s: float,
    ) -> None:
        """Start the workers and run ``warmup_items`` tasks; a run of ``count`` tasks may take
        ``timeout_s`` + ``count`` / 50 seconds."""
        self.fleet, self.counter, self.timeout_s = fleet, counter, timeout_s
        self.workers = [
            fleet.worker(
                f"noop-{i}", app=NOOP_APP, queues=noop_app.QUEUE, pool="prefork", concurrency=1
            )
            for i in (1, 2)
        ]
        self.app = noop_app.create(Settings.from_env(env))
        noop = [pid for worker in self.workers for pid in process_cpu.family(worker.popen.pid)]
        self.groups = {"noop": noop} | process_cpu.runner_groups(counter)
        self.run(warmup_items)

    def run(self, count: int) -> tuple[float, str]:
        """Seconds from the first publish until ``count`` tasks ran, and their CPU report."""
        self.counter.set(noop_app.COUNTER, 0)
        cpu_before = process_cpu.snapshot(self.groups)
        begin = time.monotonic()
        for _ in range(count):
            self.app.send_task(noop_app.NOOP, queue=noop_app.QUEUE)
        while int(self.counter.get(noop_app.COUNTER) or 0) < count:
            if time.monotonic() - begin > self.timeout_s + count / 50:
                done = int(self.counter.get(noop_app.COUNTER) or 0)
                raise BenchError(f"plain Celery: only {done} of {count} tasks completed")
            self.fleet.check()
            time.sleep(POLL_S)
        elapsed = time.monotonic() - begin
        return elapsed, process_cpu.report(
            cpu_before, process_cpu.snapshot(self.groups), count, elapsed
        )

    def close(self) -> None:
        for worker in self.workers:
            self.fleet.stop(worker)
        self.app.close()
