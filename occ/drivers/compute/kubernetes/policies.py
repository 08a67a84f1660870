"""When an Agent's own NetworkPolicies (``agent_policies``) are written, moved and removed.

``stage`` runs in ``prepare_revision``, before the revision's workload can start: the
revision's runtime ingress policy, and the Agent's authentication egress opened for the
revision, unless it already selects a newer one (or this one closed it): a superseded
revision's pass never moves it back. The write carries the read object's
``resourceVersion``, so a pass that read before a newer revision took the policy over gets a
conflict (retried, and then it sees the newer number) instead of overwriting it. ``close``
shuts the egress once its revision is active (or stops, or retires) while it still selects
it; ``retire`` removes the revision's runtime policy. The authentication egress goes with the
Agent (its labels).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import agent_policies, ensure, failures, kinds


@dataclass(frozen=True)
class NetworkOptions:
    """Who may call the gateways and where a starting gateway may authenticate (settings)."""

    callers: tuple[Mapping[str, Mapping[str, str]], ...] = ()
    authentication_egress: tuple[str, ...] = ()
    port: int = 8080


def stage(
    steps: ensure.Steps,
    operation: base.Operation,
    revision: base.RevisionSpec,
    namespace: str,
    options: NetworkOptions,
) -> None:
    """The revision's runtime policy, and the authentication egress opened for it."""
    runtime = agent_policies.runtime(revision, namespace, options.callers, options.port)
    steps.applied(operation, kinds.NETWORK_POLICY, namespace, runtime)
    _authentication(steps, operation, revision, namespace, options, open_egress=True)


def close(
    steps: ensure.Steps,
    operation: base.Operation,
    revision: base.RevisionSpec,
    namespace: str,
    options: NetworkOptions,
) -> None:
    """Shut the authentication egress while it selects ``revision`` (else leave it)."""
    _authentication(steps, operation, revision, namespace, options, open_egress=False)


def retire(
    steps: ensure.Steps, operation: base.Operation, revision: base.RevisionSpec, namespace: str
) -> None:
    """Remove the revision's runtime policy (its pods get no ingress after that)."""
    name = agent_policies.runtime_name(revision.revision_id)
    current = steps.owned(
        kinds.NETWORK_POLICY, namespace, name, agent_policies.runtime_labels(revision)
    )
    if current is not None:
        steps.deleted(operation, kinds.NETWORK_POLICY, namespace, current)


def _authentication(
    steps: ensure.Steps,
    operation: base.Operation,
    revision: base.RevisionSpec,
    namespace: str,
    options: NetworkOptions,
    *,
    open_egress: bool,
) -> None:
    desired = agent_policies.authentication(
        revision, namespace, options.authentication_egress, open_egress=open_egress
    )
    operation.check()
    current = _current(steps, revision, namespace)
    if current is None:
        if not open_egress:
            return  # nothing to close
        operation.check()
        if steps.api.create(kinds.NETWORK_POLICY, namespace, desired) is not None:
            return
        current = _current(steps, revision, namespace)  # created meanwhile: judge it
        if current is None:
            raise base.TransientDriverError(
                failures.CONFLICT, "the authentication egress appeared and vanished meanwhile"
            )
    if not agent_policies.moves_forward(current, revision, open_egress=open_egress):
        return  # a newer revision holds it, or this one closed it already: never move back
    if ensure.contains(current, desired):
        return
    operation.check()
    steps.api.apply(kinds.NETWORK_POLICY, namespace, _precondition(desired, current))


def _current(
    steps: ensure.Steps, revision: base.RevisionSpec, namespace: str
) -> dict[str, Any] | None:
    return steps.owned(
        kinds.NETWORK_POLICY,
        namespace,
        agent_policies.authentication_name(revision.agent_id),
        agent_policies.authentication_labels(revision),
    )


def _precondition(desired: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """``desired`` applied only over the version that was read (409 otherwise)."""
    version = ensure.metadata(current).get("resourceVersion")
    return {**desired, "metadata": {**desired["metadata"], "resourceVersion": version}}
