"""Bulk observations of the ``kubernetes`` Compute Driver from its synced watch cache.

Not a test: it asserts nothing, it measures. stdout gets these lines, for 1,000 Agents
(``_1k``) and 10,000 Agents (``_10k``; only 1,000 with ``--quick``)::

    observe_api_calls_1k     API requests per no-op observation (target 0)
    observe_per_s_1k         observations per second from the synced cache (target 2,000)
    cache_sync_s_1k          first lists of every kind, until the cache answers
    cache_mb_1k              what the cache holds (its records and indexes)
    fake_list_ms_10k         one list of every Deployment of the fake (no paging), median
    fake_list_namespace_ms_10k   one namespace's occ Deployments by label, median

stderr gets a summary with the targets and, with ``-v``, progress lines.

The cluster is the tests' fake Kubernetes API server (``tests.support.kube_api``), in this
process on 127.0.0.1, without schema validation. Every Agent's objects are put straight into
its store (``FakeKubeAPI.seed``), as the cluster holds them after a finished deploy: built by
the driver's own manifest builders, the gateway Deployment rolled out, an EndpointSlice with
a ready endpoint behind the Service; ten Agents per Namespace. The driver is built from
settings with a kubeconfig file, as a worker builds it, and reaches the fake over HTTP.

The cache's sync is timed from its start until every kind is listed; its size is the deep
size of its records and indexes (``sys.getsizeof`` over what they reach, each object once).
Then every active revision is observed in batches of 1,000 (the fleet observer's batch), in
rounds for ``--seconds``, after the journal is cleared: the requests the journal holds
afterwards (a watch session's restart included, reported apart) per observation, and the
observations per second. The fake's list latency is timed through the real client with the
raw answer (no model parsing), at the largest fleet.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import kube_seed
from bench.support import BenchError, log, report
from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import (
    KubernetesComputeDriver,
    kinds,
    naming,
    watched,
)
from occ.drivers.compute.kubernetes.configured import gateway_options
from occ.settings.config import Settings
from tests.support.kube_api import FakeKubeAPI

GATEWAY_IMAGE: Final = "registry.example/occ-gateway:bench"
PER_NAMESPACE: Final = 10
BATCH: Final = 1_000
"""Agents one observer tick asks about."""
SYNC_TIMEOUT_S: Final = 600.0
TARGET_PER_S: Final = 2_000.0
OPTIONS: Final = gateway_options(Settings(kubernetes_gateway_image=GATEWAY_IMAGE))
"""As the driver that observes writes them (its fingerprint key among them)."""


def _revision(namespace_id: str) -> base.RevisionSpec:
    return kube_seed.first_revision(
        namespace_id,
        agent_id=f"agt_{uuid.uuid4()}",
        revision_id=f"rev_{uuid.uuid4()}",
        service_principal_id=f"prn_{uuid.uuid4()}",
        model="stand-in",
    )


def seed(fake: FakeKubeAPI, agents: int, verbose: bool) -> list[base.RevisionSpec]:
    """``agents`` deployed Agents in the fake's store; their active revisions."""
    started = time.monotonic()
    revisions: list[base.RevisionSpec] = []
    for first in range(0, agents, PER_NAMESPACE):
        namespace_id = f"ns_{uuid.uuid4()}"
        namespace = naming.kubernetes_namespace("occ-", namespace_id)
        kube_seed.seed_namespace(fake, namespace, namespace_id)
        for _ in range(min(PER_NAMESPACE, agents - first)):
            revision = _revision(namespace_id)
            kube_seed.seed_agent(fake, revision, namespace, OPTIONS)
            revisions.append(revision)
        kube_seed.seed_endpoints(fake, namespace)
    log(verbose, f"seeded {agents} Agents in {time.monotonic() - started:.1f} s")
    return revisions


def deep_size(root: object) -> int:
    """Bytes of ``root`` and everything it reaches, each object counted once."""
    seen: set[int] = set()
    total = 0
    pending = [root]
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            pending.extend(item)
    return total


def _median_ms(call: Callable[[], object], times: int = 5) -> float:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def measure(agents: int, seconds: float, verbose: bool) -> dict[str, float]:
    """The figures of one fleet size (the fake's list latency too)."""
    fake = FakeKubeAPI(validate=False)
    with fake, tempfile.TemporaryDirectory() as directory:
        revisions = seed(fake, agents, verbose)
        settings = Settings(
            kubernetes_kubeconfig=str(fake.write_kubeconfig(Path(directory) / "kubeconfig")),
            kubernetes_gateway_image=GATEWAY_IMAGE,
        )
        driver = KubernetesComputeDriver.from_settings(settings)
        try:
            return _observe(fake, driver, revisions, seconds, verbose)
        finally:
            driver.close()


def _observe(
    fake: FakeKubeAPI,
    driver: KubernetesComputeDriver,
    revisions: list[base.RevisionSpec],
    seconds: float,
    verbose: bool,
) -> dict[str, float]:
    agents = len(revisions)
    started = time.monotonic()
    driver.informer.start()
    stale = driver.informer.store.wait_fresh(driver.informer.stale_after_s, SYNC_TIMEOUT_S)
    if stale:
        raise BenchError(f"the cache did not sync: {', '.join(stale)}")
    sync_s = time.monotonic() - started
    cache_mb = deep_size(driver.informer.store.objects) + deep_size(
        (driver.informer.store.slices, driver.informer.store.namespaces)
    )
    log(verbose, f"{agents}: synced in {sync_s:.2f} s, {driver.informer.store.counts()}")
    watched_plurals = {kind.kind.plural for kind in watched.KINDS}
    deadline = time.monotonic() + 30
    while not watched_plurals <= {r.path.rsplit("/", 1)[-1] for r in fake.journal if r.query}:
        if time.monotonic() > deadline:
            raise BenchError("the watches did not start")
        time.sleep(0.05)
    batches = [revisions[i : i + BATCH] for i in range(0, agents, BATCH)]
    fake.clear_journal()
    observed = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for batch in batches:
            answers = driver.observe_revisions(batch)
            if not all(seen.healthy for seen in answers.values()):
                raise BenchError("an Agent of the fleet was not observed healthy")
            observed += len(batch)
    elapsed = time.perf_counter() - started
    journal = fake.journal
    restarts = [r for r in journal if r.query.get("watch", [""])[-1] == "true"]
    log(verbose, f"{agents}: {observed} observations, watch restarts meanwhile {len(restarts)}")
    suffix = f"{agents // 1000}k"
    return {
        f"observe_api_calls_{suffix}": (len(journal) - len(restarts)) / observed,
        f"observe_per_s_{suffix}": observed / elapsed,
        f"cache_sync_s_{suffix}": sync_s,
        f"cache_mb_{suffix}": cache_mb / 1e6,
        **(_list_latency(fake, driver, revisions[0]) if agents >= 10_000 else {}),
    }


def _list_latency(
    fake: FakeKubeAPI, driver: KubernetesComputeDriver, revision: base.RevisionSpec
) -> dict[str, float]:
    """How long the fake takes to list every Deployment, and one namespace's by label."""
    namespace = naming.kubernetes_namespace("occ-", revision.namespace_id)
    core: Any = driver.api._api(kinds.DEPLOYMENT)

    def every() -> object:
        return core.list_deployment_for_all_namespaces(_preload_content=False).data

    def one_namespace() -> object:
        return core.list_namespaced_deployment(
            namespace, label_selector=watched.SELECTOR, _preload_content=False
        ).data

    return {
        "fake_list_ms_10k": _median_ms(every),
        "fake_list_namespace_ms_10k": _median_ms(one_namespace),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 Agents only")
    parser.add_argument("--seconds", type=float, default=3.0, help="observing, per fleet")
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    arguments = parser.parse_args(argv)
    figures: dict[str, float] = {}
    for agents in (1_000,) if arguments.quick else (1_000, 10_000):
        figures |= measure(agents, arguments.seconds, arguments.verbose)
    summary = []
    for suffix in ("1k", "10k"):
        if f"observe_per_s_{suffix}" not in figures:
            continue
        calls, rate = figures[f"observe_api_calls_{suffix}"], figures[f"observe_per_s_{suffix}"]
        summary.append(
            f"{suffix} Agents: {calls:g} API calls per observation (target 0: "
            f"{'met' if calls == 0 else 'MISSED'}), {rate:,.0f} observations/s (target "
            f"{TARGET_PER_S:,.0f}: {'met' if rate >= TARGET_PER_S else 'MISSED'}), sync "
            f"{figures[f'cache_sync_s_{suffix}']:.1f} s, cache "
            f"{figures[f'cache_mb_{suffix}']:.1f} MB"
        )
    report(figures, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
