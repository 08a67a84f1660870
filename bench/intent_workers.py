"""The intent benchmark's other processes: runners that start and complete claims, and a pruner
that runs one prune a request. Each is a process of its own, as the driver workers and the
control worker running beat's prune task are, so their Python work never holds the
interpreter lock the claim loop (and the timed claims) of the benchmark's own process wait
for."""

from __future__ import annotations

import multiprocessing
import multiprocessing.queues
import multiprocessing.synchronize
import time
from multiprocessing.connection import Connection
from typing import Final

from occ.reconcile import upkeep
from occ.state import values, work_queue
from occ.state.db import Database

CONTEXT: Final = multiprocessing.get_context("spawn")
"""Fresh interpreters: nothing of the parent's connection pools crosses into a child."""


def run_claims(
    url: str,
    policy: values.QueuePolicy,
    claims: multiprocessing.queues.Queue[values.Claim | None],
    nudge: multiprocessing.synchronize.Event,
    pass_s: float,
) -> None:
    """Start each claim from ``claims``, take ``pass_s`` over it, complete it and nudge the
    claim loop, until a ``None``."""
    database = Database(url, pool_size=1)
    try:
        while (claim := claims.get()) is not None:
            with database.autocommit_connection() as connection:
                run = work_queue.start(connection, policy, claim)
            time.sleep(pass_s)
            if run is not None:
                with database.autocommit_connection() as connection:
                    work_queue.complete(connection, run)
            nudge.set()
    finally:
        database.dispose()


def prune_on_request(url: str, requests: Connection) -> None:
    """For each ``(retention, budget_s)`` received, one prune run (``upkeep.prune``, its
    default batches and rests); sends back its report and how long it took. Ends at ``None``."""
    database = Database(url, pool_size=1)
    try:
        while (request := requests.recv()) is not None:
            keep, budget_s = request
            started = time.perf_counter()
            report = upkeep.prune(database, keep, budget_s=budget_s)
            requests.send((report, time.perf_counter() - started))
    finally:
        database.dispose()


class Pruner:
    """A pruning process: ``start`` asks for a run, ``running`` says whether it goes on,
    ``result`` waits for its report and duration."""

    def __init__(self, url: str) -> None:
        self._requests, child = CONTEXT.Pipe()
        self._process = CONTEXT.Process(target=prune_on_request, args=(url, child), daemon=True)
        self._process.start()

    def start(self, keep: upkeep.Retention, budget_s: float) -> None:
        self._requests.send((keep, budget_s))

    def running(self) -> bool:
        return not self._requests.poll()

    def result(self) -> tuple[upkeep.PruneReport, float]:
        report, took_s = self._requests.recv()
        return report, took_s

    def close(self) -> None:
        self._requests.send(None)
        self._process.join(timeout=30)
