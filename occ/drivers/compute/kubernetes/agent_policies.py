"""Pure builders of an Agent's own NetworkPolicies, on top of its namespace's default deny.

* ``rev-<uuid>-runtime`` (one per revision): ingress to the revision's gateway pods on the
  gateway port from the allowed callers (``GatewayOptions.callers``; none: nobody), staged
  before the revision's workload starts and removed with the revision.
* ``agt-<uuid>-authentication`` (one per Agent): the temporary authentication egress. It
  selects only the newest revision being brought up (its pods, by revision id) and allows
  egress to the authentication endpoints (``GatewayOptions.authentication_egress``, TCP 443)
  until that revision is active, then allows nothing. It records the revision number it
  selects and whether it is still open: that pair only ever moves forward (``moves_forward``),
  so neither a superseded revision's pass nor a repeated one of the active revision opens
  it again.

No I/O: ``policies`` decides when each is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import naming

AUTHENTICATION_PORT: Final = 443
REVISION_NUMBER_ANNOTATION: Final = "occ.dev/revision-number"
"""Annotation of the authentication egress: the number of the revision it selects."""
PHASE_ANNOTATION: Final = "occ.dev/authentication"
"""Annotation of the authentication egress: ``open`` while its revision comes up, then
``closed``."""
OPEN: Final = "open"
CLOSED: Final = "closed"

Manifest = naming.Manifest


def runtime_name(revision_id: str) -> str:
    return f"{naming.slug(revision_id)}-runtime"


def authentication_name(agent_id: str) -> str:
    return f"{naming.slug(agent_id)}-authentication"


def peers(callers: tuple[Mapping[str, Mapping[str, str]], ...]) -> list[Manifest]:
    """The NetworkPolicy peers of the allowed callers (``namespace`` and ``pods`` labels)."""
    found: list[Manifest] = []
    for caller in callers:
        peer: Manifest = {}
        if "namespace" in caller:
            peer["namespaceSelector"] = {"matchLabels": dict(caller["namespace"])}
        if "pods" in caller:
            peer["podSelector"] = {"matchLabels": dict(caller["pods"])}
        found.append(peer)
    return found


def _revision_pods(revision: base.RevisionSpec) -> Manifest:
    return {
        "matchLabels": {
            naming.AGENT_ID: revision.agent_id,
            naming.ROLE: naming.Role.GATEWAY,
            naming.REVISION_ID: revision.revision_id,
        }
    }


def runtime_labels(revision: base.RevisionSpec) -> dict[str, str]:
    return naming.labels(
        naming.Role.NETWORK_POLICY,
        namespace_id=revision.namespace_id,
        agent_id=revision.agent_id,
        revision_id=revision.revision_id,
    )


def authentication_labels(revision: base.RevisionSpec) -> dict[str, str]:
    return naming.labels(
        naming.Role.NETWORK_POLICY, namespace_id=revision.namespace_id, agent_id=revision.agent_id
    )


def runtime(
    revision: base.RevisionSpec,
    namespace_name: str,
    callers: tuple[Mapping[str, Mapping[str, str]], ...],
    port: int,
) -> Manifest:
    """Ingress to the revision's gateway pods from the allowed callers, on ``port`` only."""
    ingress = (
        [{"from": peers(callers), "ports": [{"protocol": "TCP", "port": port}]}] if callers else []
    )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": naming.metadata(
            runtime_name(revision.revision_id), namespace_name, runtime_labels(revision)
        ),
        "spec": {
            "podSelector": _revision_pods(revision),
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


def authentication(
    revision: base.RevisionSpec,
    namespace_name: str,
    cidrs: tuple[str, ...],
    *,
    open_egress: bool,
) -> Manifest:
    """The Agent's authentication egress selecting ``revision``'s pods: open (egress to
    ``cidrs`` on TCP 443) while it comes up, closed (no egress) once it is active."""
    egress = (
        [
            {
                "to": [{"ipBlock": {"cidr": cidr}} for cidr in cidrs],
                "ports": [{"protocol": "TCP", "port": AUTHENTICATION_PORT}],
            }
        ]
        if open_egress and cidrs
        else []
    )
    annotations = {
        REVISION_NUMBER_ANNOTATION: str(revision.revision_number),
        naming.REVISION_ANNOTATION: revision.revision_id,
        PHASE_ANNOTATION: OPEN if open_egress else CLOSED,
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": naming.metadata(
            authentication_name(revision.agent_id),
            namespace_name,
            authentication_labels(revision),
            annotations,
        ),
        "spec": {
            "podSelector": _revision_pods(revision),
            "policyTypes": ["Egress"],
            "egress": egress,
        },
    }


def position(policy: Mapping[str, Any]) -> tuple[int, int]:
    """Where an authentication egress stands: (the number of the revision it selects, 0 while
    open and 1 once closed); an unreadable annotation stands before every revision."""
    annotations = (policy.get("metadata") or {}).get("annotations") or {}
    try:
        number = int(annotations.get(REVISION_NUMBER_ANNOTATION, ""))
    except ValueError:
        return (-1, 0)
    return (number, 1 if annotations.get(PHASE_ANNOTATION) == CLOSED else 0)


def moves_forward(
    policy: Mapping[str, Any], revision: base.RevisionSpec, *, open_egress: bool
) -> bool:
    """Whether opening (or closing) the egress for ``revision`` moves ``policy`` forward: a
    newer revision opening it, or the revision it selects closing it. Never back: not to an
    older revision, and not open again once its revision closed it."""
    wanted = (revision.revision_number, 0 if open_egress else 1)
    return wanted > position(policy)
