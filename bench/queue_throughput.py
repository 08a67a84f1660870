"""The work queue benchmark's throughput phases: ``WORKERS`` worker processes claiming,
starting and completing no-op items, measured against a baseline of plain single-row UPDATE
commits sampled right before and after each phase."""

from __future__ import annotations

import math
import multiprocessing
import time
from dataclasses import astuple, dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from bench import queue_world
from bench.support import log
from occ.state import db, values, work_claims, work_queue

WORKERS = 4
"""Worker processes of the throughput phases (the machine this was tuned on has 2 cores)."""
POLICY = values.QueuePolicy()


class Baseline:
    """One client committing a plain single-row UPDATE, one transaction each, same stack.

    Sampled before and after every phase, because other load on the machine drifts during a
    run.
    """

    TABLE = "public.queue_bench_baseline"

    def __init__(self, url: str, engine: sa.Engine, seconds: float) -> None:
        self.engine = engine
        self.seconds = seconds
        self.samples: list[float] = []
        with engine.connect() as connection:
            connection.execute(
                sa.text(
                    f"CREATE TABLE IF NOT EXISTS {self.TABLE}"
                    " (id integer PRIMARY KEY, n bigint NOT NULL)"
                )
            )
            connection.execute(
                sa.text(f"INSERT INTO {self.TABLE} VALUES (1, 0) ON CONFLICT DO NOTHING")
            )
        self.database = db.Database(url, pool_size=1, application_name="occ-bench")
        self.update = sa.text(f"UPDATE {self.TABLE} SET n = n + 1 WHERE id = 1")

    def sample(self) -> float:
        """Commits/s over ``seconds``; remembered for the run's mean."""
        commits = 0
        started = time.perf_counter()
        deadline = started + self.seconds
        while time.perf_counter() < deadline:
            with self.database.transaction() as session:
                session.execute(self.update)
            commits += 1
        rate = commits / (time.perf_counter() - started)
        self.samples.append(rate)
        return rate

    @property
    def mean(self) -> float:
        return sum(self.samples) / len(self.samples)

    def close(self) -> None:
        self.database.dispose()
        with self.engine.connect() as connection:
            connection.execute(sa.text(f"DROP TABLE {self.TABLE}"))


# -- throughput -------------------------------------------------------------------------------


@dataclass
class Counters:
    """Tallies of one worker thread (written by that thread only), or of a whole phase."""

    done: int = 0
    claims: int = 0
    empty_claims: int = 0
    spent_starts: int = 0
    unique_violations: int = 0

    def __add__(self, other: Counters) -> Counters:
        return Counters(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))


@dataclass(frozen=True)
class Throughput:
    """Items completed inside the measured window, the window, and the phase's counters."""

    items: int
    seconds: float
    counters: Counters
    baseline: float
    """Baseline commits/s: the mean of the samples taken just before and just after the phase."""

    @property
    def items_per_s(self) -> float:
        return self.items / self.seconds

    def __add__(self, other: Throughput) -> Throughput:
        seconds = self.seconds + other.seconds
        return Throughput(
            self.items + other.items,
            seconds,
            self.counters + other.counters,
            (self.baseline * self.seconds + other.baseline * other.seconds) / seconds,
        )


def _worker(
    database: db.Database, batch: int, stop: Any, counters: Counters, failures: list[BaseException]
) -> None:
    """claim tx (batch) ; per item: start ; complete (autocommit). No work in between."""
    try:
        while not stop.is_set():
            try:
                with database.transaction() as session:
                    claims = work_claims.claim(session, POLICY, limit=batch)
            except sa_exc.IntegrityError:
                # the unique one-claim-per-lane index fired: the claim SQL let two heads through
                counters.unique_violations += 1
                continue
            counters.claims += 1
            if not claims:
                counters.empty_claims += 1
                time.sleep(0.002)
                continue
            for dispatch in claims:
                # start and complete are one statement each on an autocommit connection, as
                # the workers run them
                with database.autocommit_connection() as connection:
                    run = work_queue.start(connection, POLICY, dispatch)
                if run is None:
                    counters.spent_starts += 1
                    continue
                with database.autocommit_connection() as connection:
                    work_queue.complete(connection, run)
                counters.done += 1
    except BaseException as exc:
        failures.append(exc)
        stop.set()


def _process_main(url: str, batch: int, stop: Any, results: Any) -> None:
    """One worker process (like one prefork pool process): its own connections, no GIL
    shared with the others."""
    database = db.Database(url, pool_size=2, application_name="occ-bench")
    counters, failures = Counters(), list[BaseException]()
    _worker(database, batch, stop, counters, failures)
    database.dispose()
    results.put((astuple(counters), repr(failures[0]) if failures else None))


def measure_throughput(
    url: str, *, batch: int, total: int, warmup_s: float, measure_s: float
) -> tuple[int, float, Counters]:
    """Items completed by ``WORKERS`` worker processes after a warm-up, over ``measure_s``.

    The window ends early if 90 % of the queue is done, so the queue never runs dry inside it.
    """
    context = multiprocessing.get_context("fork")
    stop, results = context.Event(), context.Queue()
    processes = [
        context.Process(target=_process_main, args=(url, batch, stop, results), daemon=True)
        for _ in range(WORKERS)
    ]
    engine = sa.create_engine(db.normalize_url(url), poolclass=sa.pool.NullPool)
    count = sa.text("SELECT count(*) FROM occ.controller_work WHERE state = 'succeeded'")

    def done() -> int:
        with engine.connect() as connection:
            return int(connection.execute(count).scalar_one())

    for process in processes:
        process.start()
    time.sleep(warmup_s)
    started, done_before = time.perf_counter(), done()
    deadline = started + measure_s
    while time.perf_counter() < deadline and done() < 0.9 * total:
        time.sleep(0.05)
        if not all(process.is_alive() for process in processes):
            break
    ended, done_after = time.perf_counter(), done()
    stop.set()
    totals, failure = Counters(), None
    for _ in processes:
        tallies, error = results.get(timeout=60)
        totals = totals + Counters(*tallies)
        failure = failure or error
    for process in processes:
        process.join(10)
    engine.dispose()
    if failure:
        raise RuntimeError(f"a bench worker failed: {failure}")
    return done_after - done_before, ended - started, totals


def throughput_phase(
    url: str,
    engine: sa.Engine,
    baseline: Baseline,
    warmup_s: float,
    *,
    lanes: int,
    items: int,
    batch: int,
    measure_s: float,
    verbose: bool,
) -> Throughput:
    """Empty the tables, queue ``items`` over ``lanes`` lanes, measure claims of ``batch``."""
    queue_world.empty(engine)
    started = time.perf_counter()
    total = queue_world.populate(engine, agents=lanes, revisions=math.ceil(items / lanes))
    queue_world.settle(engine)
    log(verbose, f"set up {total} items in {lanes} lanes in {time.perf_counter() - started:.1f} s")
    before = baseline.sample()
    done, seconds, counters = measure_throughput(
        url, batch=batch, total=total, warmup_s=warmup_s, measure_s=measure_s
    )
    local = (before + baseline.sample()) / 2
    result = Throughput(done, seconds, counters, local)
    log(
        verbose,
        f"batch {batch}, {lanes} lanes: {result.items_per_s:.0f} items/s over "
        f"{seconds:.1f} s (baseline {local:.0f} commits/s), {counters}",
    )
    return result
