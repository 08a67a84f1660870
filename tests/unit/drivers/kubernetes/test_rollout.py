"""The rollout readiness rule (kubectl's) and the ready-endpoint rule, as a table."""

from __future__ import annotations

from typing import Any

import pytest

from occ.drivers.compute.kubernetes import naming, rollout

REV = "rev_1"


def _deployment(
    *,
    revision: str = REV,
    generation: int = 2,
    replicas: int = 1,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"generation": generation},
        "spec": {
            "replicas": replicas,
            "template": {"metadata": {"annotations": {naming.REVISION_ANNOTATION: revision}}},
        },
        "status": status or {},
    }


DONE = {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
DEADLINE = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}


@pytest.mark.parametrize(
    ("deployment", "state"),
    [
        (_deployment(status=DONE), rollout.State.READY),
        (_deployment(revision="rev_other", status=DONE), rollout.State.WAITING),
        (_deployment(status={}), rollout.State.WAITING),  # fresh: nothing observed
        (_deployment(status={**DONE, "observedGeneration": 1}), rollout.State.WAITING),
        (_deployment(status={**DONE, "updatedReplicas": 0}), rollout.State.WAITING),
        (_deployment(status={**DONE, "replicas": 2}), rollout.State.WAITING),  # old pod left
        (_deployment(status={**DONE, "availableReplicas": 0}), rollout.State.WAITING),
        (_deployment(status={**DONE, "conditions": [DEADLINE]}), rollout.State.FAILED),
        (
            _deployment(status={**DONE, "observedGeneration": 1, "conditions": [DEADLINE]}),
            rollout.State.WAITING,  # a deadline of an older generation says nothing yet
        ),
        (_deployment(replicas=0, status={**DONE, "replicas": 0}), rollout.State.WAITING),
    ],
)
def test_deployment_verdict(deployment: dict[str, Any], state: rollout.State) -> None:
    assert rollout.deployment_verdict(deployment, REV).state == state


@pytest.mark.parametrize(
    ("slices", "ready"),
    [
        ([], False),
        ([{"endpoints": []}], False),
        ([{"endpoints": [{"conditions": {}}]}], True),  # omitted ready means ready
        ([{"endpoints": [{"conditions": {"ready": False}}]}], False),
        ([{"endpoints": [{"conditions": {"ready": True, "terminating": True}}]}], False),
        ([{"endpoints": [{"conditions": {"ready": False}}, {}]}, {"endpoints": None}], True),
    ],
)
def test_ready_endpoint(slices: list[dict[str, Any]], ready: bool) -> None:
    assert rollout.has_ready_endpoint(slices) is ready


def test_gateway_needs_both_the_rollout_and_an_endpoint() -> None:
    ready_slice = [{"endpoints": [{"conditions": {"ready": True}}]}]
    assert rollout.gateway_verdict(None, ready_slice, REV).state == rollout.State.WAITING
    assert rollout.gateway_verdict(_deployment(status=DONE), [], REV).state == (
        rollout.State.WAITING
    )
    assert rollout.gateway_verdict(_deployment(status=DONE), ready_slice, REV) == rollout.READY
