"""The queue gauges of a scrape, read from the database (``telemetry.metrics`` renders them)."""

from __future__ import annotations

import logging

from occ.foundation import errors
from occ.state import agents as agent_rows
from occ.state import observations, work_reads
from occ.state.db import Database
from occ.telemetry import metrics, observability


def reader(database: Database, compute_driver: str) -> metrics.GaugeReader:
    """A reader of the queue gauges on ``database`` (the observation lag of ``compute_driver``'s
    fleet among them): one snapshot per scrape; an unreachable database is logged and leaves the
    gauges out of that scrape."""

    def read() -> metrics.QueueGauges | None:
        try:
            with database.snapshot() as session:
                backlog = work_reads.backlog(session)
                counts = agent_rows.count_by_status(session)
                lag_s = observations.lag_s(session, compute_driver)
        except errors.OccError as exc:
            observability.log(
                "worker.error",
                level=logging.WARNING,
                code="METRICS_DATABASE_UNAVAILABLE",
                error=exc.code,
            )
            return None
        return metrics.QueueGauges(
            pending=backlog.pending,
            oldest_pending_age_s=backlog.oldest_age_s,
            agents={status.value: count for status, count in counts.items()},
            observation_lag_s=lag_s,
        )

    return read
