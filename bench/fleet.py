"""Fleet benchmark: what observing an idle fleet of running Agents costs, and how it scales.

Not a test: it asserts nothing, it measures. For each fleet size N (1,000 and 10,000 by default;
``--agents``; ``--only`` runs some of the phases steady, scaling, overload, repair), stdout
gets ``fleet_<N>_<name>=value`` lines:

    rows_per_observation        rows inserted, updated or deleted in occ's tables per observation
    inserts_per_observation     of which inserted (no work row, no audit row: target 0)
    statements_per_observation  SQL statements the observer ran
    commits_per_observation     transactions PostgreSQL committed (target <= 0.1)
    messages_per_observation    Celery messages: one per tick (target <= 0.01)
    api_calls_per_observation   requests the fake Kubernetes API server answered (target 0)
    observations_per_s          one observer process with everything due (target >= 2,000)
    observations_per_core_s     the same per CPU second of the observer and PostgreSQL
    cpu_ms_per_agent_interval   CPU (observer and PostgreSQL) to observe one Agent once
    core_share_at_60s           that, for N Agents at a 60 s interval, as a share of one core
                                (target <= 0.10 at N = 10,000)
    lag_p99_s                   the cursor's lag at each tick, steady state at a 60 s interval
    procs_<k>_observations_per_s   k = 1, 2, 4 observer processes side by side (target 2 >= 1.8x 1)
    procs_<k>_observations_per_core_s  the same per CPU second of the observers and PostgreSQL:
                                flat across k when the observers share no lock (on a machine
                                with fewer cores than observers plus PostgreSQL need, the rate
                                is bounded by cores and this is the figure that shows scaling)
    overload_new_rows           rows inserted while observing at 5x the capacity (target 0)
    overload_lag_max_s          the lag then (grows, bounded by one interval)
    repair_latency_s            a gateway Deployment deleted -> the Agent recorded ready again,
                                at a 10 s interval (target: within 2 intervals)

The ``history`` phase (once, not per size) runs ``bench/intent.py``'s measurements and prints
them as ``history_<name>=value``: a deploy's pickup p99 behind 10,000 due repairs against an
idle queue, the work table's rows and size over accelerated days with retention on, the prune's
rate and its effect on the claim, and the health count over millions of finished rows.

stderr gets a summary against the targets and, with ``-v``, progress lines.

Set-up: ``OCC_TEST_DATABASE_URL`` names a PostgreSQL server (a scratch database is created and
dropped). The fleet is made in bulk (``bench/fleet_world.py``: rows as occ's deploys leave
them, and each Agent's objects in the fake Kubernetes API server of the tests, started in this
process, with the kubernetes driver's own manifests, rollouts done). Observers are separate
processes (``bench/fleet_observers.py``: ``multiprocessing``, spawned) that run the fleet
observer's tick (``occ.reconcile.observer.tick``) the way beat and the control worker do: a
tick every ``Settings.observer_tick_period_ms`` (an eighth of the interval, 1-10 s), the next at
once while more is due. They build the kubernetes driver from settings and reach the
fake over HTTP through a kubeconfig, as a worker reaches a cluster. Rows come from
``pg_stat_user_tables``, commits from ``pg_stat_database``, CPU from ``/proc`` (the observer
processes and every PostgreSQL backend), API calls from the fake's journal.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from bench import deploys, fleet_counts, fleet_observers, fleet_repair, fleet_world, intent, workers
from bench.fleet_observers import GATEWAY_IMAGE, SECRET_KEY
from bench.support import BenchError, log, percentile, report
from occ.drivers.compute.kubernetes.configured import gateway_options
from occ.settings.config import Settings
from occ.state import secret_store
from occ.state.db import Database
from tests.support import fleets
from tests.support.kube_api import FakeKubeAPI

STEADY_INTERVAL_MS: Final = 60_000
THROUGHPUT_S: Final = 12.0
OVERLOAD_S: Final = 12.0


# -- one fleet size --------------------------------------------------------------------------


PHASES: Final = ("steady", "scaling", "overload", "repair")
"""The phases measured per fleet size."""
HISTORY: Final = "history"
"""The phase of ``bench/intent.py`` (deploy pickup behind upkeep, flat history, prune, health),
measured once."""


def measure(n: int, phases: Sequence[str], verbose: bool) -> dict[str, float]:
    """The figures of ``phases`` for a fleet of ``n`` running Agents."""
    figures: dict[str, float] = {}
    with workers.scratch(f"fleet{n}", "redis://127.0.0.1:6379/11") as (directory, urls):
        owner = Database(urls.owner, pool_size=2, application_name="occ-fleet-bench")
        fake = FakeKubeAPI(validate=False).start()
        try:
            made = time.monotonic()
            app = Database(urls.app, pool_size=1, application_name="occ-fleet-bench")
            admin = deploys.bootstrap(app)
            app.dispose()
            fleets.running_agents(owner, admin, n)
            fleets.seal_secrets(owner, secret_store.SecretStore(SECRET_KEY), "fleet-credential")
            fleet = fleet_world.members(owner)
            options = gateway_options(
                Settings(kubernetes_gateway_image=GATEWAY_IMAGE, secret_key=SECRET_KEY)
            )
            fleet_world.objects(fake, fleet, options)
            fleet_world.publish_endpoints(owner, fleet)
            log(verbose, f"{n}: fleet made in {time.monotonic() - made:.0f} s")
            kubeconfig = str(fake.write_kubeconfig(directory / "kubeconfig"))

            if "steady" in phases:
                figures.update(steady(owner, urls.app, kubeconfig, fake, n, verbose))
            if "scaling" in phases or "overload" in phases:
                figures.update(scaling(owner, urls.app, kubeconfig, n, verbose))
            if "overload" in phases:
                capacity = figures["procs_1_observations_per_s"]
                figures.update(overload(owner, urls.app, kubeconfig, n, capacity, verbose))
            if "repair" in phases:
                figures.update(
                    fleet_repair.repair(owner, urls.app, kubeconfig, fake, fleet, verbose)
                )
        finally:
            fake.stop()
            owner.dispose()
    return figures


def steady(
    owner: Database, url: str, kubeconfig: str, fake: FakeKubeAPI, n: int, verbose: bool
) -> dict[str, float]:
    """One observer at the default 60 s interval for one interval: every Agent observed once."""
    fleet_counts.set_cursor(owner, 0)
    run = fleet_observers.Run(url, kubeconfig, STEADY_INTERVAL_MS, STEADY_INTERVAL_MS / 1000)
    before: list[tuple[int, int, int]] = []

    def begin() -> None:  # what the observer's start (its cache's lists) did is not counted
        fake.clear_journal()
        before.append(fleet_counts.database_counts(owner))

    [result], postgres_s = fleet_observers.run_observers(run, 1, on_ready=begin)
    [(inserted, written, commits)] = before
    calls = [request for request in fake.journal if "watch" not in request.query]
    api_calls = len(calls)
    paths = collections.Counter(f"{request.method} {request.path}" for request in calls)
    log(verbose, f"{n}: API calls while observing: {paths.most_common(5)}")
    watches = len(fake.journal) - api_calls
    inserted_after, written_after, commits_after = fleet_counts.database_counts(owner)
    observed = max(result.observations, 1)
    cpu_ms = (result.cpu_s + postgres_s) * 1000 / observed
    log(verbose, f"{n}: steady {result.observations} observations, verdicts {result.verdicts}")
    if result.verdicts.get("unchanged", 0) != result.observations:
        raise BenchError(f"the idle fleet was not all unchanged: {result.verdicts}")
    return {
        "rows_per_observation": (written_after - written) / observed,
        "inserts_per_observation": (inserted_after - inserted) / observed,
        "statements_per_observation": result.statements / observed,
        # less the two statistics reads of this process
        "commits_per_observation": max(commits_after - commits - 2, 0) / observed,
        "messages_per_observation": result.ticks / observed,
        "api_calls_per_observation": api_calls / observed,
        "watch_requests_per_minute": watches * 60_000 / STEADY_INTERVAL_MS,
        "cpu_ms_per_agent_interval": cpu_ms,
        "core_share_at_60s": n * cpu_ms / STEADY_INTERVAL_MS,
        "lag_p99_s": percentile(result.lags, 0.99),
    }


def scaling(owner: Database, url: str, kubeconfig: str, n: int, verbose: bool) -> dict[str, float]:
    """1, 2 and 4 observers with everything always due (an interval far shorter than the fleet
    takes): observations per second, and per CPU second."""
    figures: dict[str, float] = {}
    interval_ms = max(n // 50, 100)  # the fleet would need 50,000 observations a second
    for processes in (1, 2, 4):
        fleet_counts.set_cursor(owner, interval_ms)
        results, postgres_s = fleet_observers.run_observers(
            fleet_observers.Run(url, kubeconfig, interval_ms, THROUGHPUT_S), processes
        )
        observed = sum(result.observations for result in results)
        cpu_s = sum(result.cpu_s for result in results) + postgres_s
        figures[f"procs_{processes}_observations_per_s"] = observed / THROUGHPUT_S
        figures[f"procs_{processes}_observations_per_core_s"] = observed / cpu_s
        if processes == 1:
            figures["observations_per_s"] = observed / THROUGHPUT_S
            figures["observations_per_core_s"] = observed / (results[0].cpu_s + postgres_s)
        log(verbose, f"{n}: {processes} observers, {observed / THROUGHPUT_S:.0f} observations/s")
    return figures


def overload(
    owner: Database, url: str, kubeconfig: str, n: int, capacity: float, verbose: bool
) -> dict[str, float]:
    """One observer whose interval asks five times what it can observe: lag, never rows."""
    interval_ms = max(int(n / (5 * max(capacity, 1.0)) * 1000), 1)
    fleet_counts.set_cursor(owner, 0)
    before = fleet_counts.work_rows(owner)
    inserted, _, _ = fleet_counts.database_counts(owner)
    [result], _ = fleet_observers.run_observers(
        fleet_observers.Run(url, kubeconfig, interval_ms, OVERLOAD_S), 1
    )
    inserted_after, _, _ = fleet_counts.database_counts(owner)
    grown = fleet_counts.work_rows(owner) - before
    log(verbose, f"{n}: overload interval {interval_ms} ms, {grown} work rows")
    return {
        "overload_new_rows": inserted_after - inserted,
        "overload_lag_max_s": max(result.lags, default=0.0),
        "overload_interval_s": interval_ms / 1000,
    }


# -- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--agents", default="1000,10000", help="fleet sizes, comma-separated (1000,10000)"
    )
    parser.add_argument("--quick", action="store_true", help="1,000 Agents only")
    parser.add_argument(
        "--only",
        default=",".join((*PHASES, HISTORY)),
        help=f"phases to run, comma-separated ({','.join((*PHASES, HISTORY))}); a fleet's "
        "summary needs its four",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    args = parser.parse_args(argv)
    sizes = [1000] if args.quick else [int(size) for size in args.agents.split(",")]
    phases = [phase for phase in args.only.split(",") if phase]
    if unknown := set(phases) - {*PHASES, HISTORY}:
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    workers.exit_on_sigterm()
    started = time.monotonic()
    figures: dict[str, float] = {}
    summary: list[str] = []
    fleet_phases = [phase for phase in phases if phase in PHASES]
    for n in sizes if fleet_phases else []:
        measured = measure(n, fleet_phases, args.verbose)
        figures.update({f"fleet_{n}_{name}": value for name, value in measured.items()})
        if set(fleet_phases) == set(PHASES):
            summary.append(_summary(n, measured))
    if HISTORY in phases:
        # intent ahead of upkeep and bounded history: bench/intent.py's phases, on their own
        # scratch database (a deep queue and millions of finished rows, not a fleet)
        found, lines = intent.measure(quick=args.quick, verbose=args.verbose)
        figures.update({f"history_{name}": value for name, value in found.items()})
        summary.extend(lines)
    summary.append(f"({time.monotonic() - started:.0f} s in all on {os.cpu_count()} CPUs)")
    report(figures, summary)
    return 0


def _summary(n: int, f: dict[str, float]) -> str:
    ratio = f["procs_2_observations_per_s"] / f["procs_1_observations_per_s"]
    per_core = f["procs_2_observations_per_core_s"] / f["procs_1_observations_per_core_s"]
    return (
        f"fleet {n}: per no-op observation {f['inserts_per_observation']:.3f} inserts "
        f"(target 0), {f['api_calls_per_observation']:.3f} API calls (target 0), "
        f"{f['messages_per_observation']:.4f} messages (target <= 0.01), "
        f"{f['commits_per_observation']:.3f} commits (target <= 0.1), "
        f"{f['statements_per_observation']:.3f} statements; "
        f"{f['observations_per_s']:.0f} observations/s (target >= 2000), "
        f"{f['observations_per_core_s']:.0f} per CPU s; "
        f"{f['core_share_at_60s'] * 100:.1f}% of a core at 60 s (target <= 10% at 10,000); "
        f"lag p99 {f['lag_p99_s']:.1f} s; 2 observers {ratio:.2f}x one (target >= 1.8; "
        f"per CPU s {per_core:.2f}x one: bounded by cores, not locks); "
        f"at 5x overload {f['overload_new_rows']:.0f} rows (target 0), lag up to "
        f"{f['overload_lag_max_s']:.1f} s of a {f['overload_interval_s']:.1f} s interval; "
        f"repair in {f['repair_latency_intervals']:.1f} intervals (target <= 2)"
    )


if __name__ == "__main__":
    sys.exit(main())
