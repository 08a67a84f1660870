"""Readiness rules of a gateway: kubectl's rollout rule plus a ready Service endpoint.

Pure functions over objects in wire form (camelCase dicts as the API returns them). A rollout
is judged only for the revision whose annotation the Deployment's pod template carries; a
fresh object's missing status fields count as 0. This module reads nothing itself.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import naming

PROGRESS_DEADLINE_EXCEEDED: Final = "ProgressDeadlineExceeded"
DEADLINE_EXCEEDED: Final = "ROLLOUT_PROGRESS_DEADLINE_EXCEEDED"
"""The reason code a revision whose rollout passed its progress deadline fails with."""


class State(enum.StrEnum):
    READY = "ready"
    WAITING = "waiting"
    FAILED = "failed"


@dataclass(frozen=True)
class Verdict:
    """The state of a rollout and, unless ready, why (a short fixed phrase)."""

    state: State
    reason: str = ""


READY: Final = Verdict(State.READY)


def _count(status: Mapping[str, Any], key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) else 0


def template_revision(deployment: Mapping[str, Any]) -> str | None:
    """The revision the Deployment's pod template runs (its annotation), if any."""
    template = (deployment.get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(naming.REVISION_ANNOTATION)
    return value if isinstance(value, str) else None


def deployment_verdict(deployment: Mapping[str, Any], revision_id: str) -> Verdict:
    """kubectl's ``rollout status`` rule for ``revision_id``'s template."""
    if template_revision(deployment) != revision_id:
        return Verdict(State.WAITING, "the gateway template runs another revision")
    metadata = deployment.get("metadata") or {}
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    generation = metadata.get("generation")
    if not isinstance(generation, int) or _count(status, "observedGeneration") < generation:
        return Verdict(State.WAITING, "the rollout is not observed yet")
    for condition in status.get("conditions") or ():
        if (
            condition.get("type") == "Progressing"
            and condition.get("reason") == PROGRESS_DEADLINE_EXCEEDED
        ):
            return Verdict(State.FAILED, "the rollout exceeded its progress deadline")
    desired = spec.get("replicas")
    desired = desired if isinstance(desired, int) else 1
    updated = _count(status, "updatedReplicas")
    if updated < desired:
        return Verdict(State.WAITING, "updated replicas are not all created")
    if _count(status, "replicas") > updated:
        return Verdict(State.WAITING, "old replicas are still terminating")
    if _count(status, "availableReplicas") < updated:
        return Verdict(State.WAITING, "updated replicas are not available")
    if desired < 1:
        return Verdict(State.WAITING, "the gateway is scaled to zero")
    return READY


def has_ready_endpoint(slices: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any EndpointSlice lists a ready, non-terminating endpoint.

    ``conditions.ready`` left out means ready; ``terminating`` left out means not terminating
    (the API's documented defaults).
    """
    for endpoint_slice in slices:
        for endpoint in endpoint_slice.get("endpoints") or ():
            conditions = endpoint.get("conditions") or {}
            if conditions.get("ready") is not False and conditions.get("terminating") is not True:
                return True
    return False


def gateway_verdict(
    deployment: Mapping[str, Any] | None,
    slices: Iterable[Mapping[str, Any]],
    revision_id: str,
) -> Verdict:
    """Ready once ``revision_id``'s rollout is done and its Service has a ready endpoint."""
    if deployment is None:
        return Verdict(State.WAITING, "the gateway Deployment does not exist")
    verdict = deployment_verdict(deployment, revision_id)
    if verdict.state != State.READY:
        return verdict
    if not has_ready_endpoint(slices):
        return Verdict(State.WAITING, "the gateway Service has no ready endpoint")
    return READY


def observation(verdict: Verdict) -> base.Ready | base.Pending | base.Failed:
    """The driver's observation of a rollout verdict."""
    if verdict.state == State.FAILED:
        return base.Failed(DEADLINE_EXCEEDED, permanent=True, reason=verdict.reason)
    if verdict.state == State.WAITING:
        return base.Pending(verdict.reason)
    return base.Ready()
