"""The executor reads "now" on the database clock where it compares with a database time: an
Agent operation's duration since admission is measured with this host's skew taken out."""

from __future__ import annotations

import datetime as dt
import uuid

import prometheus_client
import pytest

from occ.foundation import codes
from occ.reconcile import executor, outcome, revision
from occ.state import values, work_keys
from occ.telemetry import clock_skew


def _deploy_durations() -> tuple[float, float]:
    sample = prometheus_client.REGISTRY.get_sample_value
    labels = {"operation": "deploy"}
    return (
        sample("occ_agent_operation_duration_seconds_count", labels) or 0.0,
        sample("occ_agent_operation_duration_seconds_sum", labels) or 0.0,
    )


def test_a_worker_a_minute_ahead_measures_a_deploy_from_admission_on_the_database_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(clock_skew.PROCESS, "skew_s", 60.0)  # this host reads 60 s ahead
    key = work_keys.revision_reconcile(f"rev_{uuid.uuid4()}")
    admitted = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=70)  # 10 s ago, database clock
    claim = values.Claim(
        work_id=str(key),
        key=key,
        token=uuid.uuid4(),
        owner=values.WorkOwner(namespace_id="ns_x", actor_id="prn_x"),
        attempt_count=1,
        claimed_at=admitted,
        lease_expires_at=admitted,
        created_at=admitted,
        running=True,
    )
    count, total = _deploy_durations()

    executor._measure(
        revision.DEPLOYMENT, claim, outcome.success(codes.Code.REVISION_ACTIVATED), 0.1
    )

    after_count, after_total = _deploy_durations()
    assert after_count == count + 1
    assert after_total - total == pytest.approx(10.0, abs=1.0)
