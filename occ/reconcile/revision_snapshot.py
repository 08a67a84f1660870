"""What a revision pass reads before any effect, and what it decides from that alone.

``RevisionRead`` holds the rows a pass reads first; ``refusal`` is the decision table that ends
a pass before any Compute call (a pure function, unit-tested without a database); ``snapshot``
arranges the rows a pass goes on with. The store does the reading (``revision_store``); the
pass's logic (``revision``) works from the ``Snapshot``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from occ import iam
from occ.drivers.account import ownership
from occ.drivers.compute import base
from occ.foundation import codes, harnesses
from occ.reconcile import specs
from occ.state import agents, iam_policy, namespaces, revisions, values

Code = codes.Code


@dataclass(frozen=True)
class Snapshot:
    """What a pass read in one transaction, after every check passed."""

    agent: agents.Agent
    revision: revisions.Revision
    active: revisions.Revision | None
    earlier: tuple[revisions.Revision, ...]
    """The Agent's older revisions on this driver that were not retired yet, oldest first."""
    spec: base.RevisionSpec
    """The revision as the driver sees it, with its credential for a deploy pass."""
    successor_id: str | None = None
    """A newer revision of the Agent whose deployment is under way (the newest such)."""
    age_ms: int = 0
    """How long ago the pass's item was admitted (on the database clock)."""
    retire: bool = False
    """A maintenance pass of a revision whose deployment failed for good: it retires the
    revision's runtime instead of repairing it."""

    @property
    def maintenance_superseded(self) -> bool:
        """Maintenance of this revision must not act: it is no longer the active one, or a
        newer deploy was admitted (whose pass may be stopping this revision right now)."""
        return self.agent.active_revision_id != self.revision.id or self.successor_id is not None

    @property
    def superseded(self) -> bool:
        """A revision at least as new as this one is active already."""
        return (
            self.active is not None
            and self.active.id != self.revision.id
            and self.active.revision_number >= self.revision.revision_number
        )


@dataclass(frozen=True)
class RevisionRead:
    """The rows a pass reads first (``None``: missing)."""

    namespace: namespaces.Namespace | None
    agent: agents.Agent | None
    revision: revisions.Revision | None
    principal: iam_policy.Principal | None
    """The Agent's service principal."""
    deployment: values.WorkItem | None
    """The revision's deployment item (read by maintenance passes only)."""


def refusal(read: RevisionRead, *, driver_name: str, maintenance: bool) -> Code | None:
    """The code that ends the pass before any effect, or ``None`` to go on: checks in order
    (docs/reconciliation.md), the first that applies decides. The code's outcome class says how
    the item ends (``REVISION_SUPERSEDED`` completes it; the others fail or retry it)."""
    namespace, agent, revision = read.namespace, read.agent, read.revision
    if namespace is None or agent is None or revision is None:
        return Code.INVALID_REVISION_OWNER
    if not namespace.live or namespace.status != namespaces.NamespaceStatus.READY:
        return Code.NAMESPACE_NOT_READY
    if (
        revision.namespace_id != agent.namespace_id
        or revision.service_principal_id != agent.service_principal_id
    ):
        return Code.INVALID_REVISION_OWNER
    if agent.status != agents.AgentStatus.ACTIVE:
        return Code.INVALID_AGENT_STATE
    if retiring(read, maintenance=maintenance):
        # a retirement only takes away: no principal, harness or permission is needed for it
        return Code.COMPUTE_DRIVER_MISMATCH if revision.compute_driver != driver_name else None
    if read.principal is None or read.principal.disabled:
        return Code.INVALID_AGENT_PRINCIPAL
    if harnesses.mode_of(revision.harness_id) != revision.harness_mode:
        return Code.HARNESS_MISMATCH
    if revision.compute_driver != driver_name:
        return Code.COMPUTE_DRIVER_MISMATCH
    deployment = read.deployment
    if maintenance and (deployment is None or deployment.reason_code == Code.REVISION_SUPERSEDED):
        return Code.REVISION_SUPERSEDED
    return None


def retiring(read: RevisionRead, *, maintenance: bool) -> bool:
    """Whether a maintenance pass retires its revision: its deployment failed for good."""
    deployment = read.deployment
    return (
        maintenance
        and deployment is not None
        and deployment.state == values.WorkState.FAILED_PERMANENT
    )


def deploy_checks(
    actor_id: str, agent: agents.Agent, revision: revisions.Revision
) -> list[tuple[str, str, iam.Resource]]:
    """The re-authorization of a pass: the actor may deploy the Agent, and the actor and the
    service principal may read the pinned Configuration and operate the harness Secret; for a
    managed account, the actor may still read the pinned account."""
    namespace_id = agent.namespace_id
    checks = [(actor_id, "agent:deploy", iam.Resource("agent", agent.id, namespace_id))]
    configuration = iam.Resource("configuration", revision.configuration_id, namespace_id)
    secret_id = revision.harness_auth.get("secretId")
    account = ownership.pinned(revision.harness_auth)
    if account is not None:
        checks.append(
            (actor_id, "account:read", iam.Resource("account", account.account_id, namespace_id))
        )
    for principal in (actor_id, agent.service_principal_id):
        checks.append((principal, "configuration:read", configuration))
        if isinstance(secret_id, str):
            checks.append(
                (principal, "secret:operate", iam.Resource("secret", secret_id, namespace_id))
            )
    return checks


def snapshot(
    agent: agents.Agent,
    revision: revisions.Revision,
    all_revisions: Sequence[revisions.Revision],
    *,
    driver_name: str,
    credential: base.Credential | None,
    successor_id: str | None,
    age_ms: int = 0,
    retired: Collection[str] = (),
    retire: bool = False,
) -> Snapshot:
    """The snapshot a pass works from: the active revision and this driver's earlier ones
    that may still have a runtime (not in ``retired``, the revisions an earlier deploy
    retired)."""
    earlier = sorted(
        (
            r
            for r in all_revisions
            if r.revision_number < revision.revision_number
            and r.compute_driver == driver_name
            and r.id not in retired
        ),
        key=lambda r: r.revision_number,
    )
    return Snapshot(
        agent=agent,
        revision=revision,
        active=next((r for r in all_revisions if r.id == agent.active_revision_id), None),
        earlier=tuple(earlier),
        spec=specs.revision(revision, credential),
        successor_id=successor_id,
        age_ms=age_ms,
        retire=retire,
    )


def repair_target(agent: agents.Agent | None, retired_id: str) -> str | None:
    """The active revision to repair once revision ``retired_id``'s runtime was retired, or
    ``None``: the Agent is gone, not wanted running, runs no revision, or runs the retired
    one."""
    if agent is None or agent.desired_runtime_state != agents.DesiredRuntimeState.RUNNING:
        return None
    active_id = agent.active_revision_id
    if active_id is None or active_id == retired_id:
        return None
    return active_id


def repair_owner(revision: revisions.Revision) -> values.WorkOwner:
    """Who owns a repair of ``revision``: like any repair, whoever deployed it."""
    return values.WorkOwner(
        namespace_id=revision.namespace_id,
        actor_id=revision.actor_id,
        agent_id=revision.agent_id,
        revision_id=revision.id,
    )
