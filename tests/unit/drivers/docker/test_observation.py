"""How the fleet observation judges a listed gateway container, and when it inspects one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from occ.drivers.compute import base, standin
from occ.drivers.compute.docker import engine, observation, workload

PORT = 49_153
ENDPOINT = standin.endpoint(PORT)
NOT_READY = base.Observed(False, code=observation.NOT_READY)
STARTING = base.Observed(False, code=observation.NOT_READY, starting=True)


def _listed(state: str = "running", status: str = "Up 5 seconds") -> dict[str, Any]:
    ports = [{"IP": "127.0.0.1", "PrivatePort": workload.PORT, "PublicPort": PORT, "Type": "tcp"}]
    return {"Id": "c1", "State": state, "Status": status, "Ports": ports}


def _health(status: str, failing: int) -> dict[str, Any]:
    state = {"Running": True, "Restarting": False, "Paused": False}
    return {"State": {**state, "Health": {"Status": status, "FailingStreak": failing}}}


class Inspections:
    """The inspect documents the engine would answer, and which containers were inspected."""

    def __init__(self, document: Mapping[str, Any] | None = None) -> None:
        self.document = document
        self.asked: list[str] = []

    def __call__(self, container_id: str) -> Mapping[str, Any]:
        self.asked.append(container_id)
        if self.document is None:
            raise engine.NotFound(container_id)
        return self.document


@pytest.mark.parametrize(
    ("listed", "expected"),
    [
        (None, base.Observed(False, code=observation.GONE)),
        (_listed(), base.Observed(True, ENDPOINT)),  # no health check
        (_listed(status="Up 1 minute (healthy)"), base.Observed(True, ENDPOINT)),
        (_listed("paused", "Up 1 minute (Paused)"), NOT_READY),
        (_listed("exited", "Exited (1) 3 seconds ago"), NOT_READY),
        ({**_listed(status="Up 1 minute (healthy)"), "Ports": []}, NOT_READY),
    ],
)
def test_a_listing_settles_what_it_shows_plainly_without_an_inspect(
    listed: dict[str, Any] | None, expected: base.Observed
) -> None:
    inspections = Inspections()

    assert observation.observed(listed, inspections) == expected
    assert inspections.asked == []


@pytest.mark.parametrize(
    ("status", "document", "expected"),
    [
        ("(health: starting)", _health("starting", 0), STARTING),
        # unpaused, not probed again yet: the engine says unhealthy with no failed probe
        ("(unhealthy)", _health("unhealthy", 0), STARTING),
        ("(unhealthy)", _health("unhealthy", 2), NOT_READY),
        # it passed its check between the listing and the inspect
        ("(health: starting)", _health("healthy", 0), base.Observed(True, ENDPOINT)),
        ("(health: starting)", None, base.Observed(False, code=observation.GONE)),  # removed since
    ],
)
def test_a_check_in_doubt_is_judged_from_the_inspect_document(
    status: str, document: dict[str, Any] | None, expected: base.Observed
) -> None:
    inspections = Inspections(document)

    assert observation.observed(_listed(status=f"Up 2 seconds {status}"), inspections) == expected
    assert inspections.asked == ["c1"]
