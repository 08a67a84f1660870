"""Prometheus metrics of the API and the workers (no tenant ids as labels).

Counters and histograms are recorded where things happen; the queue gauges (pending work, oldest
pending age, Agents per lifecycle state) come from a reader the caller hands in, called on each
scrape (``occ.runtime.gauges`` reads them from the database). Processes that
fork (gunicorn, the prefork pool) aggregate through prometheus-client's multiprocess mode when
``PROMETHEUS_MULTIPROC_DIR`` names a directory of this program: importing this module claims it
(``occ.telemetry.metrics_directory``) before any metric exists. ``occ_build_info`` (version and
Python, value 1) is added to every exposition.
"""

from __future__ import annotations

import http.server
import importlib.metadata
import platform
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

import prometheus_client
from prometheus_client import multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from occ.telemetry import metrics_directory

metrics_directory.claim()  # before any metric: stale files of a previous run are gone

_SLOW_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900)

HTTP_REQUESTS: Final = prometheus_client.Counter(
    "occ_http_requests_total", "HTTP requests answered.", ["method", "route", "status"]
)
HTTP_DURATION: Final = prometheus_client.Histogram(
    "occ_http_request_duration_seconds", "Time to answer an HTTP request.", ["method", "route"]
)
RECONCILIATION_ATTEMPTS: Final = prometheus_client.Counter(
    "occ_reconciliation_attempts_total",
    "Reconciliation passes by work kind and outcome.",
    ["work_kind", "outcome"],
)
RECONCILIATION_DURATION: Final = prometheus_client.Histogram(
    "occ_reconciliation_attempt_duration_seconds",
    "Duration of one reconciliation pass.",
    ["work_kind"],
    buckets=_SLOW_BUCKETS,
)
AGENT_OPERATION_DURATION: Final = prometheus_client.Histogram(
    "occ_agent_operation_duration_seconds",
    "Admission to completion of an Agent operation (deploy, stop, delete).",
    ["operation"],
    buckets=_SLOW_BUCKETS,
)
CLAIM_DURATION: Final = prometheus_client.Histogram(
    "occ_claim_duration_seconds", "Time of one claim statement."
)
OBSERVATIONS: Final = prometheus_client.Counter(
    "occ_observations_total",
    "Observations of running Agents by the fleet observer, by what each led to.",
    ["verdict"],
)
RECONCILER_ERRORS: Final = prometheus_client.Counter(
    "occ_reconciler_errors_total",
    "Passes that raised an unexpected exception (a bug), by work kind; each is retried.",
    ["work_kind"],
)
CLAIMS_LOST: Final = prometheus_client.Counter(
    "occ_claims_lost_total", "Passes that found their claim gone and published nothing."
)
CLOCK_SKEW: Final = prometheus_client.Gauge(
    "occ_clock_skew_seconds",
    "This process's wall clock minus the database clock, as last measured.",
    multiprocess_mode="liveall",
)
RECOVERED: Final = prometheus_client.Counter(
    "occ_work_recovered_total", "Items recovery requeued or failed.", ["result"]
)


@dataclass(frozen=True)
class QueueGauges:
    """What the queue gauges show, as read from the database for one scrape."""

    pending: int
    """Work items queued or claimed."""
    oldest_pending_age_s: float
    agents: Mapping[str, int]
    """Agents by lifecycle state."""
    observation_lag_s: float | None = None
    """How far behind the database clock the fleet was observed (``None``: never)."""


GaugeReader = Callable[[], "QueueGauges | None"]
"""Reads the queue gauges for a scrape; ``None`` when the database could not answer."""


class QueueCollector(Collector):
    """The database-backed gauges, read on every scrape."""

    def __init__(self, read: GaugeReader) -> None:
        self.read = read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        gauges = self.read()
        if gauges is None:
            return
        pending = GaugeMetricFamily("occ_work_pending", "Work items queued or claimed.")
        pending.add_metric([], float(gauges.pending))
        oldest = GaugeMetricFamily(
            "occ_work_oldest_pending_age_seconds", "Age of the oldest queued or claimed work item."
        )
        oldest.add_metric([], gauges.oldest_pending_age_s)
        agents = GaugeMetricFamily(
            "occ_agents", "Agents by lifecycle state.", labels=["lifecycle_state"]
        )
        for status, count in gauges.agents.items():
            agents.add_metric([status], float(count))
        yield from (pending, oldest, agents)
        if gauges.observation_lag_s is not None:
            lag = GaugeMetricFamily(
                "occ_observation_lag_seconds",
                "How far behind now the fleet observer has observed the running Agents.",
            )
            lag.add_metric([], gauges.observation_lag_s)
            yield lag


class BuildInfoCollector(Collector):
    """``occ_build_info``: occ's version (package metadata) and Python's, value 1."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        info = GaugeMetricFamily(
            "occ_build_info", "occ's version and Python's (value 1).", labels=["version", "python"]
        )
        info.add_metric([version(), platform.python_version()], 1.0)
        yield info


def version() -> str:
    """occ's installed version (``unknown`` when the package metadata is missing)."""
    try:
        return importlib.metadata.version("occ")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _process_registry() -> prometheus_client.CollectorRegistry:
    """This process's metrics, or every process's of this program in multiprocess mode."""
    found = metrics_directory.current()
    if found.claimed and found.directory is not None:
        combined = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(combined, str(found.directory))  # type: ignore[no-untyped-call]
        return combined
    return prometheus_client.REGISTRY


def render(read_gauges: GaugeReader | None = None) -> tuple[bytes, str]:
    """The exposition text (process metrics and ``occ_build_info``, plus the queue gauges when
    a reader is given) and its content type."""
    text = prometheus_client.generate_latest(_process_registry())
    extra = prometheus_client.CollectorRegistry(auto_describe=False)
    extra.register(BuildInfoCollector())
    if read_gauges is not None:
        extra.register(QueueCollector(read_gauges))
    text += prometheus_client.generate_latest(extra)
    return text, prometheus_client.CONTENT_TYPE_LATEST


def serve(
    port: int, read_gauges: GaugeReader | None = None, *, address: str = "127.0.0.1"
) -> http.server.ThreadingHTTPServer:
    """Expose metrics on a private listener at ``address:port`` (workers have no HTTP API);
    the running server."""

    class _Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body, content_type = render(read_gauges)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    class _Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

    server = _Server((address, port), _Handler)
    threading.Thread(target=server.serve_forever, name="occ-metrics", daemon=True).start()
    return server
