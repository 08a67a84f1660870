"""Benchmark of the work queue (``occ.state.work_queue``): prints ``name=value`` figures.

Not a test: it asserts nothing, it measures. ``OCC_TEST_DATABASE_URL`` names an empty database
the benchmark owns (created if missing, migrated with ``occ.state.schema.upgrade``, emptied with
TRUNCATE between phases, all as the URL's user). stdout gets exactly these lines::

    batch1_items_per_s        no-op items/s, batch-1 claims, 100 lanes
    batch50_items_per_s       no-op items/s, batch-50 claims, 100 lanes
    claim_p50_ms_1k           one claim statement (limit 10), 1,000 terminal rows in the table
    claim_p99_ms_1k
    claim_p50_ms_1m           the same with 1,000,000 terminal rows (skipped by --quick)
    claim_p99_ms_1m
    claim_p99_ms_1k_queued    one claim statement with 1,000 queued items over 1,000 lanes
    claim_p99_ms_100k_queued  the same with 100,000 queued items (a ratio of about 1: flat)
    own_lane_items_per_s      batch-50 items/s, every item in its own lane
    shared_lanes_items_per_s  batch-50 items/s, the same number of items over 1,000 lanes

stderr gets a short summary: the ratios, the targets, and a baseline measured in the same run
(``baseline_update_commits_per_s``: one client committing a plain single-row UPDATE through the
same ``Database`` stack, sampled right before and right after every throughput phase), so runs on
different machines or under different load can be compared as ratios: each phase's ratio is
against the mean of its own two samples, which bracket it.

An item is processed the way a driver task processes it: the claim transaction hands out a
batch of dispatch claims, then each item gets its own start (``work_queue.start`` exchanges the
dispatch token for a run token) and its own completion (``work_queue.complete``, which writes
the audit evidence row in the same statement), each one statement on an autocommit connection
(``Database.autocommit_connection``: no BEGIN or COMMIT round trip, no session). So one item
costs two commits plus its share of one claim commit. ``WORKERS`` worker processes (4, on a
2-core machine, like a prefork pool) each loop: claim tx (batch) ; per item: start ; complete
(autocommit). They connect as the URL's user through ``occ.state.db.Database``, the stack the
workers use. The work is Agent-revision work
(``agent_revision:<rev>:reconcile``); its lane is the Agent, so many revisions of one Agent are
many items in one lane. Rows are set up with bulk INSERT ... SELECT
statements, then VACUUM ANALYZE (and CHECKPOINT when the user may).

Claim latency: 3,000 queued items over 1,000 lanes, 64 live claims (busy lanes), and 1,000 or
1,000,000 succeeded rows (one INSERT ... SELECT generate_series). One thread times
``work_claims.claim(limit=10)`` (the statement and its rows, not BEGIN or COMMIT) after a
warm-up, so the figures are those of the prepared statement's steady-state plan; each claimed
batch is then released, which keeps every count constant from sample to sample.

Backlog depth: the same claim over 1,000 and over 100,000 queued items (1,000 lanes, 64 live
claims, no terminal rows), set up in two databases at once (the URL's and the URL's name with
``_deep`` appended) and sampled alternately, one claim in each, so both figures see the same
moments of the machine's other load.

The phases run in the order batch1, batch50, latency 1k (half), 1m, 1k (other half), depth,
own, shared, shared, own: each pair that forms a ratio brackets the other, so a drift in other load
on the machine during the run moves both sides alike. A full run takes about 4 to 5 minutes on
2 cores (a minute of it inserting the million rows); ``--quick`` about a minute.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import multiprocessing
import os
import sys
import time
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from alembic import util as alembic_util
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from bench.support import figure, log, percentile, say
from occ.state import db, schema, values, work_claims, work_queue

WORKERS = 4
"""Worker threads of the throughput phases (the machine this was tuned on has 2 cores)."""

BATCH_LANES = 100
SHARED_LANES = 1_000
LATENCY_LANES = 1_000
LATENCY_QUEUED = 3_000
TARGET_DEPTH_RATIO = 1.2
"""A claim over 100,000 queued items may cost at most this much more than over 1,000."""
LATENCY_LIMIT = 10
LATENCY_IN_FLIGHT = 64
"""Claims held live while claim latency is measured (``OCC_MAX_IN_FLIGHT``): busy lanes."""

POLICY = values.QueuePolicy()
HOLD_POLICY = values.QueuePolicy(dispatch_lease_ms=3_600_000)

TARGET_BATCH50_PER_BASELINE = 0.8
"""batch50 items/s per baseline commit/s (sampled around the batch50 phase) at the least."""
TARGET_P99_RATIO = 1.2
TARGET_SHARED_RATIO = 0.8


@dataclass(frozen=True)
class Plan:
    """How long and how big each phase is (``--quick`` shrinks it)."""

    warmup_s: float
    measure_s: float
    batch1_items: int
    batch50_items: int
    latency_samples: int
    latency_warmup: int
    baseline_s: float
    million: bool


FULL = Plan(
    warmup_s=2.0,
    measure_s=10.0,
    batch1_items=12_000,
    batch50_items=30_000,
    latency_samples=2_000,
    latency_warmup=200,
    baseline_s=1.5,
    million=True,
)
QUICK = Plan(
    warmup_s=1.0,
    measure_s=4.0,
    batch1_items=6_000,
    batch50_items=15_000,
    latency_samples=600,
    latency_warmup=100,
    baseline_s=1.0,
    million=False,
)


# -- database setup (as the URL's user) -------------------------------------------------------


def admin_engine(url: str) -> sa.Engine:
    return sa.create_engine(
        db.normalize_url(url), isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
    )


def ensure_database(url: str, *, recreate: bool = False) -> None:
    """Create the URL's database if it does not exist (or anew), then migrate it.

    A database stamped with a revision the migrations no longer have (one was renamed or
    folded away) is dropped and created again: it is the benchmark's own, emptied every phase.
    """
    target = make_url(db.normalize_url(url))
    name = target.database
    if not name:
        raise SystemExit("OCC_TEST_DATABASE_URL must name a database")
    server = admin_engine(target.set(database="postgres").render_as_string(hide_password=False))

    def create(drop: bool) -> None:
        with server.connect() as connection:
            quoted = connection.dialect.identifier_preparer.quote(name)
            if drop:
                connection.execute(sa.text(f"DROP DATABASE IF EXISTS {quoted}"))
            exists = connection.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            ).first()
            if exists is None:
                connection.execute(sa.text(f"CREATE DATABASE {quoted}"))

    create(recreate)
    try:
        schema.upgrade(url)
    except alembic_util.CommandError as exc:
        log(True, f"{name} cannot be migrated ({exc}): creating it again")
        create(True)
        schema.upgrade(url)
    finally:
        server.dispose()


def empty(engine: sa.Engine) -> None:
    """TRUNCATE every occ table but Alembic's version table."""
    with engine.connect() as connection:
        tables = (
            connection.execute(
                sa.text(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'occ'"
                    " AND tablename <> 'alembic_version' ORDER BY tablename"
                )
            )
            .scalars()
            .all()
        )
        connection.execute(
            sa.text("TRUNCATE " + ", ".join(f"occ.{table}" for table in tables) + " CASCADE")
        )


def settle(engine: sa.Engine) -> None:
    """VACUUM ANALYZE what the phase inserted and, when allowed, CHECKPOINT.

    The checkpoint keeps the setup's dirty pages from being written out during measurement.
    """
    with engine.connect() as connection:
        connection.execute(
            sa.text(
                "VACUUM (ANALYZE) occ.controller_work, occ.agent_revisions, occ.agents,"
                " occ.principals, occ.namespaces, occ.configurations, occ.audit_events"
            )
        )
        with contextlib.suppress(sa_exc.DBAPIError):  # needs superuser or pg_checkpoint
            connection.execute(sa.text("CHECKPOINT"))


_ACTOR = """
    INSERT INTO occ.principals (id, name, kind)
    VALUES ('prn_' || gen_random_uuid(), 'bench-actor', 'human')
    RETURNING id"""

_NAMESPACES = """
    INSERT INTO occ.namespaces (id, name, status, created_by)
    SELECT 'ns_' || gen_random_uuid(), 'bench-ns-' || g, 'ready', %(actor)s
      FROM generate_series(0, %(namespaces)s - 1) g"""

_CONFIGURATIONS = """
    INSERT INTO occ.configurations (id, namespace_id, name, document)
    SELECT 'cfg_' || gen_random_uuid(), n.id, 'bench-config', '{}'::jsonb
      FROM occ.namespaces n"""

# Agent g lives in namespace g mod namespaces; its name carries g. Each Agent owns one service
# principal (the two foreign keys between them are deferred to commit).
_AGENTS = """
    WITH ns AS (
      SELECT n.id, c.id AS configuration_id, split_part(n.name, '-', 3)::int AS k
        FROM occ.namespaces n JOIN occ.configurations c ON c.namespace_id = n.id
    ), placed AS MATERIALIZED (
      SELECT f.g, f.id, f.principal_id, ns.id AS namespace_id, ns.configuration_id
        FROM (SELECT g, 'agt_' || gen_random_uuid() AS id,
                     'prn_' || gen_random_uuid() AS principal_id
                FROM generate_series(0, %(agents)s - 1) g) f
        JOIN ns ON ns.k = mod(f.g, %(namespaces)s)
    ), service_principals AS (
      INSERT INTO occ.principals (id, name, kind, namespace_id, agent_id)
      SELECT principal_id, 'bench-agent-' || g, 'service', namespace_id, id FROM placed
    )
    INSERT INTO occ.agents
      (id, namespace_id, name, configuration_id, harness_id, harness_version, execution_mode,
       compute_driver, service_principal_id)
    SELECT id, namespace_id, 'bench-agent-' || g, configuration_id, 'openclaw', '1.0.0',
           'embedded', 'local', principal_id
      FROM placed"""

_REVISIONS = """
    INSERT INTO occ.agent_revisions
      (id, namespace_id, agent_id, revision_number, actor_id, configuration_id,
       configuration_generation, configuration_document, harness_id, harness_version,
       harness_mode, compute_driver, harness_auth, service_principal_id)
    SELECT 'rev_' || gen_random_uuid(), a.namespace_id, a.id, r, %(actor)s, a.configuration_id,
           1, '{}'::jsonb, 'openclaw', '1.0.0', 'embedded', 'local',
           jsonb_build_object('kind', 'secret', 'secretId', 'sec_' || gen_random_uuid()),
           a.service_principal_id
      FROM occ.agents a CROSS JOIN generate_series(1, %(revisions)s) r"""

# One queued item per revision, lanes interleaved in FIFO order (revision 1 of every Agent,
# then revision 2 of every Agent, ...), as work arriving from many Agents at once looks.
_QUEUED = """
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, revision_id, actor_id, available_at, created_at,
       updated_at)
    SELECT 'agent_revision:' || r.id || ':reconcile', 'revision_reconcile', r.namespace_id,
           r.agent_id, r.id,
           %(actor)s, o.at, o.at, o.at
      FROM occ.agent_revisions r JOIN occ.agents a ON a.id = r.agent_id
     CROSS JOIN LATERAL (
       SELECT now() - interval '1 hour' + ((r.revision_number - 1) * %(agents)s
              + split_part(a.name, '-', 3)::int) * interval '1 microsecond' AS at) o"""

# Terminal history: Agent stop work that succeeded long ago, spread over the same Agents. The
# rows of one Agent are consecutive so the shape CHECK's per-Agent regular expression stays in
# PostgreSQL's regex cache.
_TERMINAL = """
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, actor_id, agent_target, state, attempt_count,
       available_at, created_at, updated_at, completed_at, reason_code)
    SELECT 'agent:' || a.id || ':reconcile:stopped:' || gen_random_uuid(), 'agent_stopped',
           a.namespace_id, a.id,
           %(actor)s, 'stopped', 'succeeded', 1, o.at, o.at, o.at + interval '1 second',
           o.at + interval '1 second', 'AGENT_STOPPED'
      FROM generate_series(0, %(rows)s - 1) g
      JOIN (SELECT id, namespace_id, split_part(name, '-', 3)::int AS k FROM occ.agents) a
        ON a.k = g / %(per_agent)s
     CROSS JOIN LATERAL (SELECT now() - interval '30 days' + g * interval '1 second' AS at) o"""


def populate(engine: sa.Engine, *, agents: int, revisions: int, terminal: int = 0) -> int:
    """Agents with ``revisions`` queued revision items each (+ ``terminal`` succeeded rows).

    Returns the number of queued items. One transaction, bulk statements only.
    """
    namespaces = max(1, min(100, agents))
    with engine.begin() as connection:
        actor = connection.exec_driver_sql(_ACTOR).scalar_one()
        params = {
            "actor": actor,
            "namespaces": namespaces,
            "agents": agents,
            "revisions": revisions,
            "rows": terminal,
            "per_agent": max(1, math.ceil(terminal / agents)),
        }
        for statement in (_NAMESPACES, _CONFIGURATIONS, _AGENTS, _REVISIONS, _QUEUED):
            connection.exec_driver_sql(statement, params)
        if terminal:
            connection.exec_driver_sql(_TERMINAL, params)
    return agents * revisions


# -- baseline ---------------------------------------------------------------------------------


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
    plan: Plan,
    *,
    lanes: int,
    items: int,
    batch: int,
    measure_s: float,
    verbose: bool,
) -> Throughput:
    """Empty the tables, queue ``items`` over ``lanes`` lanes, measure claims of ``batch``."""
    empty(engine)
    started = time.perf_counter()
    total = populate(engine, agents=lanes, revisions=math.ceil(items / lanes))
    settle(engine)
    log(verbose, f"set up {total} items in {lanes} lanes in {time.perf_counter() - started:.1f} s")
    before = baseline.sample()
    done, seconds, counters = measure_throughput(
        url, batch=batch, total=total, warmup_s=plan.warmup_s, measure_s=measure_s
    )
    local = (before + baseline.sample()) / 2
    result = Throughput(done, seconds, counters, local)
    log(
        verbose,
        f"batch {batch}, {lanes} lanes: {result.items_per_s:.0f} items/s over "
        f"{seconds:.1f} s (baseline {local:.0f} commits/s), {counters}",
    )
    return result


# -- claim latency ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    p50_ms: float
    p99_ms: float

    @classmethod
    def of(cls, timings_ms: list[float]) -> Latency:
        return cls(percentile(timings_ms, 0.50), percentile(timings_ms, 0.99))


class ClaimSampler:
    """A queue set up for timing one claim statement (limit 10), in the database of ``url``.

    It holds ``queued`` queued items over ``LATENCY_LANES`` lanes, ``LATENCY_IN_FLIGHT`` live
    claims (their lanes are busy) and ``terminal`` succeeded rows. After each timed claim its
    items are released (queued again at the back, attempt refunded), so the queued, claimed and
    terminal counts stay what they were set up to be for every sample.
    """

    def __init__(self, url: str, engine: sa.Engine, *, queued: int, terminal: int) -> None:
        empty(engine)
        populate(engine, agents=LATENCY_LANES, revisions=queued // LATENCY_LANES, terminal=terminal)
        settle(engine)
        self.engine = engine
        self.label = f"{queued} queued, {terminal} terminal rows"
        self.database = db.Database(url, pool_size=2, application_name="occ-bench")
        with self.database.transaction() as session:
            work_claims.claim(session, HOLD_POLICY, limit=LATENCY_IN_FLIGHT)

    def sample(self) -> float:
        """Milliseconds of one claim statement and its rows (not BEGIN or COMMIT)."""
        with self.database.transaction() as session:
            session.execute(sa.text("SELECT 1"))  # BEGIN goes out here, outside the timing
            before = time.perf_counter()
            claims = work_claims.claim(session, POLICY, limit=LATENCY_LIMIT)
            elapsed = time.perf_counter() - before
        with self.database.transaction() as session:
            for dispatch in claims:
                work_queue.release(session, dispatch)
        return elapsed * 1000

    def close(self) -> None:
        self.database.dispose()
        empty(self.engine)


def latency_phase(
    url: str,
    engine: sa.Engine,
    plan: Plan,
    *,
    terminal: int,
    samples: int,
    verbose: bool,
) -> list[float]:
    """Time ``samples`` claims beside ``terminal`` succeeded rows (``LATENCY_QUEUED`` queued),
    after a warm-up. Returns milliseconds."""
    started = time.perf_counter()
    sampler = ClaimSampler(url, engine, queued=LATENCY_QUEUED, terminal=terminal)
    log(verbose, f"set up {sampler.label} in {time.perf_counter() - started:.1f} s")
    gc.collect()
    timings = [sampler.sample() for _ in range(plan.latency_warmup + samples)]
    sampler.close()
    timings = timings[plan.latency_warmup :]
    log(verbose, f"claim latency, {sampler.label}: {Latency.of(timings)}")
    return timings


def depth_phase(url: str, plan: Plan, *, verbose: bool) -> tuple[list[float], list[float]]:
    """Claim latency over 1,000 and over 100,000 queued items, sample by sample side by side.

    The two queues live in two databases of the same server (the deep one is the URL's name
    with ``_deep`` appended, created and migrated like the first); the samples alternate
    between them (and which goes first), so a drift in the machine's other load moves both
    figures alike. Returns the shallow and the deep milliseconds.
    """
    target = make_url(db.normalize_url(url))
    deep_url = target.set(database=f"{target.database}_deep").render_as_string(hide_password=False)
    ensure_database(deep_url)
    engines = admin_engine(url), admin_engine(deep_url)
    shallow = ClaimSampler(url, engines[0], queued=1_000, terminal=0)
    deep = ClaimSampler(deep_url, engines[1], queued=100_000, terminal=0)
    timings: dict[ClaimSampler, list[float]] = {shallow: [], deep: []}
    gc.collect()
    for sample in range(plan.latency_warmup + plan.latency_samples):
        for sampler in (shallow, deep) if sample % 2 else (deep, shallow):
            elapsed = sampler.sample()
            if sample >= plan.latency_warmup:
                timings[sampler].append(elapsed)
    for sampler in (shallow, deep):
        sampler.close()
        log(verbose, f"claim latency, {sampler.label}: {Latency.of(timings[sampler])}")
    for engine in engines:
        engine.dispose()
    return timings[shallow], timings[deep]


# -- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="shorter phases, no million-row phase (no _1m lines)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    parser.add_argument(
        "--recreate",
        action="store_true",
        help="drop and create the database first (after a migration was edited)",
    )
    args = parser.parse_args(argv)
    url = os.environ.get("OCC_TEST_DATABASE_URL")
    if not url:
        print("set OCC_TEST_DATABASE_URL to the benchmark's database", file=sys.stderr)
        return 2
    plan = QUICK if args.quick else FULL
    verbose: bool = args.verbose
    began = time.perf_counter()

    ensure_database(url, recreate=args.recreate)
    engine = admin_engine(url)
    empty(engine)
    baseline = Baseline(url, engine, plan.baseline_s)

    def throughput(*, lanes: int, items: int, batch: int, measure_s: float) -> Throughput:
        return throughput_phase(
            url,
            engine,
            baseline,
            plan,
            lanes=lanes,
            items=items,
            batch=batch,
            measure_s=measure_s,
            verbose=verbose,
        )

    def latency(terminal: int, samples: int) -> list[float]:
        return latency_phase(url, engine, plan, terminal=terminal, samples=samples, verbose=verbose)

    batch1 = throughput(
        lanes=BATCH_LANES, items=plan.batch1_items, batch=1, measure_s=plan.measure_s
    )
    figure("batch1_items_per_s", batch1.items_per_s, 0)
    batch50 = throughput(
        lanes=BATCH_LANES, items=plan.batch50_items, batch=50, measure_s=plan.measure_s
    )
    figure("batch50_items_per_s", batch50.items_per_s, 0)

    # 1k, 1m, 1k again: the two 1k halves bracket the 1m phase, so a drift in the machine's
    # other load during the run moves both figures alike instead of skewing their ratio.
    if plan.million:
        half = plan.latency_samples // 2
        first = latency(1_000, half)
        million = Latency.of(latency(1_000_000, plan.latency_samples))
        small = Latency.of(first + latency(1_000, plan.latency_samples - half))
    else:
        small = Latency.of(latency(1_000, plan.latency_samples))
    figure("claim_p50_ms_1k", small.p50_ms, 3)
    figure("claim_p99_ms_1k", small.p99_ms, 3)
    if plan.million:
        figure("claim_p50_ms_1m", million.p50_ms, 3)
        figure("claim_p99_ms_1m", million.p99_ms, 3)

    # backlog depth: 1,000 and 100,000 queued items, their samples interleaved
    shallow_timings, deep_timings = depth_phase(url, plan, verbose=verbose)
    shallow, deep = Latency.of(shallow_timings), Latency.of(deep_timings)
    figure("claim_p99_ms_1k_queued", shallow.p99_ms, 3)
    figure("claim_p99_ms_100k_queued", deep.p99_ms, 3)

    # own, shared, shared, own: the same bracketing for their ratio.
    slice_s = plan.measure_s
    own = throughput(
        lanes=plan.batch50_items, items=plan.batch50_items, batch=50, measure_s=slice_s
    )
    shared = throughput(lanes=SHARED_LANES, items=plan.batch50_items, batch=50, measure_s=slice_s)
    shared += throughput(lanes=SHARED_LANES, items=plan.batch50_items, batch=50, measure_s=slice_s)
    own += throughput(
        lanes=plan.batch50_items, items=plan.batch50_items, batch=50, measure_s=slice_s
    )
    figure("own_lane_items_per_s", own.items_per_s, 0)
    figure("shared_lanes_items_per_s", shared.items_per_s, 0)
    baseline.close()
    empty(engine)
    engine.dispose()

    runs = {"batch1": batch1, "batch50": batch50, "own_lane": own, "shared_lanes": shared}
    phase_counters = sum((r.counters for r in runs.values()), Counters())
    shared_ratio = shared.items_per_s / own.items_per_s
    batch50_ratio = batch50.items_per_s / batch50.baseline
    low, high = min(baseline.samples), max(baseline.samples)

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    lines = [
        f"baseline_update_commits_per_s={baseline.mean:.0f}",
        f"baseline over the run: {low:.0f}..{high:.0f} commits/s in {len(baseline.samples)} "
        "samples (a wide range: other load moved the figures)",
        f"{WORKERS} worker processes on {os.cpu_count()} cores;"
        " per item: start ; complete (autocommit)",
        "items/s per baseline commit/s sampled around each phase: "
        + ", ".join(f"{name} {r.items_per_s / r.baseline:.2f}" for name, r in runs.items()),
        f"batch50/baseline = {batch50_ratio:.2f} (target >= {TARGET_BATCH50_PER_BASELINE}: "
        f"{verdict(batch50_ratio >= TARGET_BATCH50_PER_BASELINE)}); "
        f"batch50/batch1 = {batch50.items_per_s / batch1.items_per_s:.2f}",
        f"shared/own = {shared_ratio:.2f} (target >= {TARGET_SHARED_RATIO}: "
        f"{verdict(shared_ratio >= TARGET_SHARED_RATIO)})",
    ]
    if plan.million:
        p99_ratio = million.p99_ms / small.p99_ms
        lines.append(
            f"claim p99 1m/1k = {p99_ratio:.2f}, p50 1m/1k = {million.p50_ms / small.p50_ms:.2f}"
            f" (target <= {TARGET_P99_RATIO}: {verdict(p99_ratio <= TARGET_P99_RATIO)})"
        )
    depth_ratio = deep.p99_ms / shallow.p99_ms
    lines.append(
        f"claim p99 100k/1k queued = {depth_ratio:.2f} (target <= {TARGET_DEPTH_RATIO}: "
        f"{verdict(depth_ratio <= TARGET_DEPTH_RATIO)})"
    )
    lines.append(
        f"empty claims {phase_counters.empty_claims} of {phase_counters.claims}; unique "
        f"violations {phase_counters.unique_violations}; spent starts "
        f"{phase_counters.spent_starts}; elapsed {time.perf_counter() - began:.0f} s"
    )
    for line in lines:
        say(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
