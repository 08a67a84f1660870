"""The work queue's settings: leases, attempts, intervals, retention and the workers' bounds."""

from __future__ import annotations

from typing import Annotated, Final

import pydantic

from occ.settings.sources import Variable
from occ.settings.topic import Topic, require_positive

_POSITIVE: Final = (
    "lease_ms",
    "dispatch_lease_ms",
    "max_attempts",
    "convergence_timeout_ms",
    "claim_interval_ms",
    "recovery_interval_ms",
    "work_retention_succeeded_days",
    "work_retention_failed_days",
    "prune_interval_ms",
    "max_in_flight",
    "unready_recheck_ms",
    "database_timeout_ms",
)


class Work(Topic):
    """How claims are leased, retried, recovered and pruned, and how much a worker holds."""

    lease_ms: Annotated[int, Variable("OCC_WORKER_LEASE_DURATION_MS")] = 15_000
    """Run lease of a started claim. It is renewed every third of it and before each effect."""

    dispatch_lease_ms: Annotated[int, Variable("OCC_DISPATCH_LEASE_MS")] = 30_000
    """Lease of a dispatched claim that has not started yet (also the expiry of its
    ``occ.run_work`` message)."""

    max_attempts: Annotated[int, Variable("OCC_WORKER_MAX_ATTEMPTS")] = 5
    """Claims an item may use before it fails."""

    convergence_timeout_ms: Annotated[int, Variable("OCC_WORKER_CONVERGENCE_TIMEOUT_MS")] = 900_000
    """Age after which pending work fails (``CONVERGENCE_DEADLINE_EXCEEDED``)."""

    claim_interval_ms: Annotated[int, Variable("OCC_CLAIM_INTERVAL_MS")] = 2_000
    """Beat period of ``occ.claim``."""

    recovery_interval_ms: Annotated[int, Variable("OCC_RECOVERY_INTERVAL_MS")] = 5_000
    """Beat period of ``occ.recover_stale``."""

    work_retention_succeeded_days: Annotated[int, Variable("OCC_WORK_RETENTION_SUCCEEDED_DAYS")] = 7
    """Days a succeeded work item is kept after it finished; ``occ.prune`` removes it then,
    unless it is the newest of its Agent or Namespace, kind and outcome, or the deployment of
    an active revision."""

    work_retention_failed_days: Annotated[int, Variable("OCC_WORK_RETENTION_FAILED_DAYS")] = 30
    """Days a failed work item is kept after it finished (with the same exceptions as
    ``OCC_WORK_RETENTION_SUCCEEDED_DAYS``)."""

    prune_interval_ms: Annotated[int, Variable("OCC_PRUNE_INTERVAL_MS")] = 60_000
    """Beat period of ``occ.prune``: each run removes expired work history and idempotency
    records in batches of 50 rows, each its own short transaction."""

    max_in_flight: Annotated[int, Variable("OCC_MAX_IN_FLIGHT")] = 64
    """Most items claimed at once across the fleet."""

    unready_recheck_ms: Annotated[int, Variable("OCC_UNREADY_RECHECK_MS")] = 500
    """Delay before an unready revision is checked again."""

    database_timeout_ms: Annotated[int, Variable("OCC_WORKER_DATABASE_TIMEOUT_MS")] = 60_000
    """Statement timeout of worker connections (capped at the lease)."""

    @pydantic.model_validator(mode="after")
    def _work_holds(self) -> Work:
        require_positive(self, _POSITIVE)
        return self
