"""The decision table of one observation (``observer.judge``), without a database."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from occ.drivers.compute import base
from occ.reconcile import maintenance, observer
from occ.state import observations, runtime_observations
from tests.support import scenarios

NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)
READY = runtime_observations.RuntimeStatus.READY
DEGRADED = runtime_observations.RuntimeStatus.DEGRADED
Verdict = observer.Verdict


def _due(**changes: Any) -> observations.Due:
    world = scenarios.agent(revisions=1, active=1)
    due = observations.Due(
        revision=world.revision,
        phase=0,
        endpoint="http://published",
        observed=READY,
        repairs=0,
        repair_after=None,
        deploying=False,
    )
    return dataclasses.replace(due, **changes)


HEALTHY = base.Observed(True, "http://published")
STARTING = base.Observed(False, "http://published", "REVISION_NOT_READY", starting=True)


@pytest.mark.parametrize(
    ("due", "seen", "verdict"),
    [
        (_due(), HEALTHY, Verdict.UNCHANGED),
        (_due(observed=DEGRADED, repairs=2), HEALTHY, Verdict.RECOVERED),
        (_due(observed=None), HEALTHY, Verdict.RECOVERED),  # never recorded for this revision
        (_due(), base.Observed(False, code="REVISION_NOT_RUNNING"), Verdict.REPAIR),
        (_due(), base.Observed(True, "http://moved"), Verdict.REPAIR),  # another endpoint
        (
            _due(observed=DEGRADED, repairs=1, repair_after=NOW + dt.timedelta(seconds=1)),
            base.Observed(False, code="REVISION_NOT_RUNNING"),
            Verdict.SPACED,
        ),
        (
            _due(observed=DEGRADED, repairs=1, repair_after=NOW),
            base.Observed(False, code="REVISION_NOT_RUNNING"),
            Verdict.REPAIR,
        ),
        (
            _due(observed=DEGRADED, repairs=maintenance.MAX_REPAIRS - 1, repair_after=NOW),
            base.Observed(False, code="REVISION_NOT_RUNNING"),
            Verdict.REPAIR,
        ),
        (  # its repairs ran out: quiet until a person acts
            _due(observed=DEGRADED, repairs=maintenance.MAX_REPAIRS, repair_after=NOW),
            base.Observed(False, code="REVISION_NOT_RUNNING"),
            Verdict.EXHAUSTED,
        ),
        (  # a runtime that comes back by itself is still seen ready
            _due(observed=DEGRADED, repairs=maintenance.MAX_REPAIRS),
            HEALTHY,
            Verdict.RECOVERED,
        ),
        (_due(), STARTING, Verdict.STARTING),  # a restart on its way back: no repair
        (_due(observed=DEGRADED, repairs=1, repair_after=NOW), STARTING, Verdict.STARTING),
        (_due(observed=None), STARTING, Verdict.STARTING),  # nothing recorded until it is ready
        (_due(deploying=True), base.Observed(False), Verdict.DEPLOYING),
        (_due(deploying=True), HEALTHY, Verdict.DEPLOYING),
    ],
)
def test_an_observation_leads_to_what_the_table_says(
    due: observations.Due, seen: base.Observed, verdict: observer.Verdict
) -> None:
    assert observer.judge(due, seen, NOW) == verdict
