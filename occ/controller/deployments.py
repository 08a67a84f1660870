"""Deployments: deploy an Agent (an immutable AgentRevision + its work).

A deploy takes its command value (``Deploy``). The deployment id is the revision id; the
revisions and a deployment's status are read through ``occ.controller.revision_reads``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from occ import iam
from occ.controller import account_sources, admission, deploy_references, quotas
from occ.controller import agents as agent_use_cases
from occ.controller import configurations as configuration_cases
from occ.drivers import sandbox as sandboxes
from occ.drivers.account import AccountBackend
from occ.drivers.configuration import ConfigurationDriver
from occ.drivers.configuration.database import DATABASE
from occ.foundation import errors, ids
from occ.state import (
    agents,
    audit,
    configurations,
    deploys,
    namespaces,
    revisions,
)
from occ.state import quotas as quota_rows
from occ.state.db import Database, Session


@dataclass(frozen=True, kw_only=True)
class Deploy:
    """A deploy of an Agent's current draft."""

    namespace_id: str
    agent_id: str


@dataclass(frozen=True, kw_only=True)
class DeployAccepted:
    """What a deploy admitted: the deployment (= revision) id and the revision."""

    deployment_id: str
    revision: revisions.Revision


@dataclass(frozen=True, kw_only=True)
class _Admitted:
    """What the checks of a deploy found: the decisions' evidence and the pinned Configuration."""

    decision: iam.Decision
    evidence: dict[str, Any]
    harness_auth: dict[str, Any]
    configuration: configurations.PinnedConfiguration


def deploy_agent(
    db: Database,
    actor_id: str,
    command: Deploy,
    *,
    sandbox: sandboxes.SandboxDriver | None = None,
    configuration_store: ConfigurationDriver = DATABASE,
    accounts: AccountBackend | None = None,
    quota_defaults: quota_rows.Counts = quotas.UNSET,
) -> DeployAccepted:
    """Admit a deployment: a new immutable revision + desired ``running`` + audit + work.

    Needs ``agent:deploy`` on the Agent, and ``configuration:read`` on its Configuration and
    ``secret:operate`` on its harness-auth Secret for both the caller and the Agent's service
    principal; a managed-account source needs ``account:read`` on the account for the caller
    and a credential the account Backend (``accounts``) still answers for under the account's
    binding (``occ.controller.account_sources``). The revision pins the Configuration's
    generation and document, the harness, the compute driver and the harness-auth reference
    (for an account: its exact token reference and Backend binding); work
    ``agent_revision:<rev>:reconcile`` is enqueued. The native document is read through the
    selected Configuration Driver (``configuration_store``); with a selected ``sandbox``, the
    document pinned is the Sandbox Driver's transformed copy of it, validated like any document
    (identity and generation stay the source's).

    Authorization (one policy load for both principals) and the Configuration read run before the
    Agent row lock, so deploys of one Agent queue only behind each other's writes: one
    statement (``occ.state.deploys``) takes the lock with the revision number and writes the
    revision, its work and the audit event while the Agent still holds the draft the checks
    saw; if it no longer does, the checks run again under the lock and the write follows.

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
        Forbidden: any of the permissions is missing (audited; nothing else written).
        AgentDeleting: the Agent is being deleted.
        NamespaceNotReady: the Namespace is not ``ready``.
        QuotaExceeded: the Agent made its Namespace's quota of revisions per Agent (counted by
            the write itself, under the Agent's row lock).
        Conflict: the Agent has no harness authentication.
    """
    agent_use_cases.require_ids(command.namespace_id, command.agent_id)
    policies = iam.PolicyCache()
    revision_id = ids.new("agent_revision")
    with admission.guarded(db, actor_id) as session:
        namespace, agent = agent_use_cases.lock_namespace_finding(
            session, command.namespace_id, command.agent_id
        )
        # the caller's and the service principal's policies in one query
        policies.preload(session, (actor_id, agent.service_principal_id), namespace.id)
        revision_limit = quota_defaults.revisions_per_agent
        assert revision_limit is not None, "every default is set"

        def checked_write(current: agents.Agent) -> deploys.DeployWritten | None:
            plan, event = _plan(
                session,
                actor_id,
                namespace,
                current,
                revision_id=revision_id,
                revision_limit=revision_limit,
                policies=policies,
                sandbox=sandbox,
                configuration_store=configuration_store,
                accounts=accounts,
            )
            return deploys.write(session, plan, event)

        written = checked_write(agent)
        if written is None:
            # deleting, gone or edited since the checks: the statement took the row lock all
            # the same, so the checks run again on what it holds and the write cannot miss
            written = checked_write(agent_use_cases.find(session, namespace.id, agent.id))
        if written is None:  # the draft is the one checked: the revisions are used up
            made = quota_rows.revisions_made(session, agent.id)
            allowed = quotas.limit(session, namespace.id, "revisions_per_agent", quota_defaults)
            raise quotas.exceeded("revisions_per_agent", allowed, made)
        return DeployAccepted(deployment_id=revision_id, revision=written.revision)


def _plan(
    session: Session,
    actor_id: str,
    namespace: namespaces.Namespace,
    agent: agents.Agent,
    *,
    revision_id: str,
    revision_limit: int,
    policies: iam.PolicyCache,
    sandbox: sandboxes.SandboxDriver | None,
    configuration_store: ConfigurationDriver,
    accounts: AccountBackend | None,
) -> tuple[deploys.DeployPlan, dict[str, Any]]:
    """The deploy's checks (``_admit``) and what passing them pins: the plan and its audit
    event (``deploys.write`` adds the revision number and the previous desired state to the
    details)."""
    admitted = _admit(session, actor_id, namespace, agent, policies, accounts=accounts)
    configuration = admitted.configuration
    native = configuration_store.load(agent.namespace_id, configuration.id, configuration.document)
    configuration = dataclasses.replace(configuration, document=native)
    if sandbox is not None:
        configuration = _sandboxed(configuration, sandbox)
    plan = deploys.DeployPlan(
        revision_id=revision_id,
        agent=agent,
        actor_id=actor_id,
        configuration=configuration,
        harness_auth=admitted.harness_auth,
        revision_limit=revision_limit,
    )
    details = {
        "revisionId": revision_id,
        "configurationId": configuration.id,
        "configurationGeneration": configuration.generation,
        "harness": {
            "id": agent.harness_id,
            "version": agent.harness_version,
            "mode": agent.execution_mode,
        },
        "computeDriver": agent.compute_driver,
        "sandboxDriver": None if sandbox is None else sandbox.id,
        "harnessAuth": dict(plan.harness_auth),
        "desiredRuntimeState": agents.DesiredRuntimeState.RUNNING,
        "authorization": {
            "agent": admitted.decision.evidence.as_details(),
            **admitted.evidence,
        },
    }
    event = audit.parameters(
        kind=audit.EventKind.MUTATION,
        action="agents.deploy",
        actor_id=plan.actor_id,
        outcome=audit.EventOutcome.SUCCESS,
        namespace_id=plan.agent.namespace_id,
        resource_kind="agent",
        resource_id=plan.agent.id,
        work_id=str(plan.work_key),
        details=details,
    )
    return plan, event


def _sandboxed(
    configuration: configurations.PinnedConfiguration, sandbox: sandboxes.SandboxDriver
) -> configurations.PinnedConfiguration:
    """The Configuration with the Sandbox Driver's copy of its document, validated."""
    document = sandbox.transform(configuration.document)
    configuration_cases.document_size(document, ("configuration", "document"))
    return dataclasses.replace(configuration, document=document)


def _admit(
    session: Session,
    actor_id: str,
    namespace: namespaces.Namespace,
    agent: agents.Agent,
    policies: iam.PolicyCache,
    *,
    accounts: AccountBackend | None,
) -> _Admitted:
    """Every check of a deploy that reads (no lock of the Agent needed), in the order they
    answer: visibility and ``agent:deploy``, deletion, Namespace status, harness auth, the
    references' permissions; then the Configuration to pin."""
    decision = admission.require(
        session,
        actor_id,
        "agents.deploy",
        "agent:deploy",
        agent_use_cases.resource(agent),
        hide_unless_readable=True,
        policies=policies,
    )
    if agent.deleting:
        raise errors.AgentDeleting("the Agent is being deleted")
    if namespace.status != namespaces.NamespaceStatus.READY:
        raise errors.NamespaceNotReady(f"the Namespace is {namespace.status}, not ready")
    source = agent.harness_auth
    if source is None:
        raise errors.Conflict("the Agent has no harness authentication; set harnessAuth")
    evidence = deploy_references.authorize(session, actor_id, agent, source.secret_id, policies)
    if source.account_id is not None:
        hidden = not iam.authorize(
            session, actor_id, "agent:read", agent_use_cases.resource(agent), policies=policies
        ).allowed
        harness_auth, account_evidence = account_sources.pin(
            session,
            actor_id,
            agent,
            source.account_id,
            backend=accounts,
            policies=policies,
            hidden=hidden,
        )
        evidence.update(account_evidence)
    else:
        harness_auth = {"kind": agents.SECRET_SOURCE, "secretId": source.secret_id}
    configuration = configurations.pinned(session, namespace.id, agent.configuration_id)
    assert configuration is not None  # the Agent's foreign key keeps it
    return _Admitted(
        decision=decision,
        evidence=evidence,
        harness_auth=harness_auth,
        configuration=configuration,
    )
