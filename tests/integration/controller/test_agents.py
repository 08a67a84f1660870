"""Agent admission use cases on real PostgreSQL: drafts with their service principal, deploy
authorization for caller and service principal, revision pinning and numbering, stop, delete
retry/takeover, and the pure deployment-status projection."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import (
    agent_lifecycle,
    agents,
    deployment_status,
    deployments,
    quotas,
    revision_reads,
)
from occ.foundation import errors, harnesses, ids
from occ.state import agents as agent_rows
from occ.state import (
    audit,
    iam_policy,
    models,
    revisions,
    values,
    work_claims,
    work_keys,
    work_queue,
)
from occ.state import quotas as quota_rows
from occ.state.db import Database
from tests.integration.controller.support import count, events, work
from tests.support import grants, rows
from tests.support.grants import principal
from tests.support.worlds import RUNTIME_PERMISSIONS


@dataclass(frozen=True)
class World:
    namespace_id: str
    configuration_id: str
    secret_id: str


@pytest.fixture
def world(db: Database, admin: str) -> World:
    return make_world(db, admin)


def make_world(db: Database, admin: str, *, status: str = "ready") -> World:
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=admin, status=status)
        content = rows.configuration_and_secret(session, namespace_id, document={"v": 1})
    return World(namespace_id, *content)


def create(
    db: Database,
    actor_id: str,
    world: World,
    *,
    name: str = "helper",
    empower: bool = True,
    quota_defaults: quota_rows.Counts = quotas.UNSET,
) -> agent_rows.Agent:
    """An embedded ``openclaw`` Agent on the World's Configuration and Secret, created by
    ``actor_id``; with ``empower``, its service principal holds the runtime permissions."""
    view = agents.create_agent(
        db,
        actor_id,
        agents.CreateAgent(
            namespace_id=world.namespace_id,
            name=name,
            configuration_id=world.configuration_id,
            harness=agent_rows.Harness("openclaw", "1.2.3"),
            execution_mode=harnesses.ExecutionMode.EMBEDDED,
            harness_auth=agent_rows.HarnessAuth("secret", world.secret_id),
        ),
        compute_driver="local",
        quota_defaults=quota_defaults,
    )
    if empower:
        grant(db, view.service_principal_id, *RUNTIME_PERMISSIONS, namespace_id=world.namespace_id)
    return view


def grant(db: Database, principal_id: str, *permissions: str, **scope: Any) -> None:
    grants.give(db, principal_id, permissions, **scope)


def deploy(db: Database, actor_id: str, view: agent_rows.Agent) -> deployments.DeployAccepted:
    return deployments.deploy_agent(
        db, actor_id, deployments.Deploy(namespace_id=view.namespace_id, agent_id=view.id)
    )


def revision(
    db: Database, actor_id: str, view: agent_rows.Agent, revision_id: str
) -> revisions.Revision:
    """Revision ``revision_id`` of the Agent, read as ``actor_id``."""
    return revision_reads.get_revision(
        db,
        actor_id=actor_id,
        namespace_id=view.namespace_id,
        agent_id=view.id,
        revision_id=revision_id,
    )


def revision_ids(db: Database, actor_id: str, view: agent_rows.Agent) -> list[str]:
    """The ids of the Agent's revisions ``actor_id`` may see, newest first."""
    listed = revision_reads.list_revisions(
        db, actor_id=actor_id, namespace_id=view.namespace_id, agent_id=view.id
    )
    return [r.id for r in listed]


def delete(db: Database, actor_id: str, view: agent_rows.Agent) -> agent_rows.Agent:
    return agent_lifecycle.delete_agent(
        db, actor_id, agent_lifecycle.DeleteAgent(namespace_id=view.namespace_id, agent_id=view.id)
    )


# -- drafts -------------------------------------------------------------------------------------


def test_create_writes_the_agent_its_principal_and_audit(
    db: Database, admin: str, world: World
) -> None:
    view = create(db, admin, world, empower=False)

    assert (view.status, view.desired_runtime_state, view.active_revision_id) == (
        "active",
        "stopped",
        None,
    )
    assert view.harness == agent_rows.Harness("openclaw", "1.2.3")
    assert view.harness_auth == agent_rows.HarnessAuth("secret", world.secret_id)
    with db.transaction() as session:
        sp = iam_policy.get_principal(session, view.service_principal_id)
    assert sp is not None
    assert (sp.kind, sp.namespace_id, sp.agent_id) == ("service", world.namespace_id, view.id)
    assert count(db, models.ControllerWork) == 0
    [event] = events(db, resource_id=view.id)
    assert (event.kind, event.action, event.actor_id, event.namespace_id, event.work_id) == (
        "mutation",
        "agents.create",
        admin,
        world.namespace_id,
        None,
    )
    assert event.details["servicePrincipalId"] == sp.id
    assert event.details["harnessAuth"] == {"kind": "secret", "secretId": world.secret_id}
    assert (
        agents.get_agent(db, actor_id=admin, namespace_id=world.namespace_id, agent_id=view.id)
        == view
    )


def test_create_is_atomic(
    db: Database, admin: str, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    principals = count(db, models.Principal)

    def broken_append(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("audit insert failed")

    monkeypatch.setattr(audit, "append", broken_append)
    with pytest.raises(RuntimeError, match="audit insert failed"):
        create(db, admin, world, empower=False)
    monkeypatch.undo()
    assert count(db, models.Agent) == 0
    assert count(db, models.Principal) == principals
    assert create(db, admin, world, empower=False).name == "helper"


def test_create_needs_agent_create_and_a_live_namespace(
    db: Database, admin: str, world: World
) -> None:
    reader = principal(db, "namespace:read")
    stranger = principal(db)
    with pytest.raises(errors.Forbidden):
        create(db, reader, world)
    with pytest.raises(errors.NotFound):
        create(db, stranger, world)
    denials = events(db, kind="authorization_denial")
    assert [(e.actor_id, e.action, e.details["permission"]) for e in denials] == [
        (stranger, "agents.create", "agent:create"),
        (reader, "agents.create", "agent:create"),
    ]
    assert denials[1].details["request"]["name"] == "helper"
    assert count(db, models.Agent) == 0

    with db.transaction() as session:
        session.execute(
            sa.update(models.Namespace)
            .where(models.Namespace.id == world.namespace_id)
            .values(status="deleting")
        )
    with pytest.raises(errors.NamespaceNotReady):
        create(db, admin, world)


def test_draft_edits_leave_revisions_alone(db: Database, admin: str, world: World) -> None:
    view = create(db, admin, world)
    accepted = deploy(db, admin, view)
    updated = agents.update_agent(
        db,
        admin,
        agents.UpdateAgent(
            namespace_id=world.namespace_id,
            agent_id=view.id,
            harness=agent_rows.Harness("codex", "2.0"),
            execution_mode=harnesses.ExecutionMode.DEDICATED,
        ),
    )

    assert (updated.harness, updated.execution_mode) == (
        agent_rows.Harness("codex", "2.0"),
        "dedicated",
    )
    assert updated.desired_runtime_state == "running"  # a draft edit is not a deployment
    pinned = revision(db, admin, view, accepted.deployment_id)
    assert pinned.harness == revisions.RevisionHarness("openclaw", "1.2.3", "embedded")
    assert count(db, models.ControllerWork) == 1


# -- deploy -------------------------------------------------------------------------------------


def test_deploy_pins_the_configuration_of_its_moment(
    db: Database, admin: str, world: World
) -> None:
    view = create(db, admin, world)
    first = deploy(db, admin, view)
    with db.transaction() as session:
        session.execute(
            sa.update(models.Configuration)
            .where(models.Configuration.id == world.configuration_id)
            .values(document={"v": 2}, generation=2)
        )
    second = deploy(db, admin, view)

    assert (
        first.revision.revision_number,
        first.revision.configuration_generation,
        first.revision.configuration_document,
    ) == (1, 1, {"v": 1})
    assert (
        second.revision.revision_number,
        second.revision.configuration_generation,
        second.revision.configuration_document,
    ) == (2, 2, {"v": 2})
    again = revision(db, admin, view, first.deployment_id)
    assert again == first.revision
    [latest, *_] = events(db, resource_id=view.id)
    assert (latest.action, latest.work_id) == (
        "agents.deploy",
        f"agent_revision:{second.deployment_id}:reconcile",
    )
    assert latest.details["revisionNumber"] == 2
    assert latest.details["previousDesiredRuntimeState"] == "running"
    assert set(latest.details["authorization"]) == {
        "agent",
        "caller:configuration:read",
        "caller:secret:operate",
        "servicePrincipal:configuration:read",
        "servicePrincipal:secret:operate",
    }


@pytest.mark.parametrize(
    ("caller_permissions", "sp_permissions", "expected", "denied"),
    [
        (
            ("agent:deploy", "agent:read", "secret:operate"),
            RUNTIME_PERMISSIONS,
            errors.Forbidden,
            "configuration:read",
        ),
        (
            ("agent:deploy", "agent:read", "configuration:read"),
            RUNTIME_PERMISSIONS,
            errors.Forbidden,
            "secret:operate",
        ),
        (
            ("agent:deploy", "configuration:read"),
            RUNTIME_PERMISSIONS,
            errors.NotFound,
            "secret:operate",
        ),
        (
            ("agent:read", "configuration:read", "secret:operate"),
            RUNTIME_PERMISSIONS,
            errors.Forbidden,
            "agent:deploy",
        ),
        (
            ("configuration:read", "secret:operate"),
            RUNTIME_PERMISSIONS,
            errors.NotFound,
            "agent:deploy",
        ),
        (
            ("agent:deploy", "agent:read", *RUNTIME_PERMISSIONS),
            ("secret:operate",),
            errors.Forbidden,
            "configuration:read",
        ),
    ],
)
def test_deploy_authorization(
    db: Database,
    admin: str,
    world: World,
    caller_permissions: tuple[str, ...],
    sp_permissions: tuple[str, ...],
    expected: type[Exception],
    denied: str,
) -> None:
    view = create(db, admin, world, empower=False)
    grant(db, view.service_principal_id, *sp_permissions, namespace_id=world.namespace_id)
    caller = principal(db, *caller_permissions, namespace_id=world.namespace_id)

    with pytest.raises(expected):
        deploy(db, caller, view)

    [denial] = events(db, kind="authorization_denial")
    assert (denial.action, denial.actor_id, denial.details["permission"]) == (
        "agents.deploy",
        caller,
        denied,
    )
    assert count(db, models.AgentRevision) == 0
    assert count(db, models.ControllerWork) == 0
    assert (
        agents.get_agent(
            db, actor_id=admin, namespace_id=world.namespace_id, agent_id=view.id
        ).desired_runtime_state
        == "stopped"
    )


def test_deploy_conflicts(db: Database, admin: str, world: World) -> None:
    with db.transaction() as session:
        bare = rows.agent(session, namespace_id=world.namespace_id)  # no harness auth
    with pytest.raises(errors.Conflict, match="harness authentication"):
        deployments.deploy_agent(
            db, admin, deployments.Deploy(namespace_id=world.namespace_id, agent_id=bare)
        )

    provisioning = make_world(db, admin, status="provisioning")
    with pytest.raises(errors.NamespaceNotReady):
        deploy(db, admin, create(db, admin, provisioning))

    view = create(db, admin, world)
    delete(db, admin, view)
    with pytest.raises(errors.AgentDeleting):
        deploy(db, admin, view)
    with pytest.raises(errors.AgentDeleting):
        agent_lifecycle.stop_agent(
            db, admin, agent_lifecycle.StopAgent(namespace_id=world.namespace_id, agent_id=view.id)
        )
    assert count(db, models.AgentRevision) == 0


def test_concurrent_deploys_get_consecutive_numbers(db: Database, admin: str, world: World) -> None:
    view = create(db, admin, world)
    numbers: list[int] = []
    failures: list[BaseException] = []
    barrier = threading.Barrier(6)

    def run() -> None:
        try:
            barrier.wait()
            for _ in range(3):
                numbers.append(deploy(db, admin, view).revision.revision_number)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(numbers) == list(range(1, 19))
    assert count(db, models.ControllerWork) == 18


def test_revision_reads_are_filtered_per_revision(db: Database, admin: str, world: World) -> None:
    view = create(db, admin, world)
    first, second = deploy(db, admin, view), deploy(db, admin, view)
    reader = principal(db)
    only_first = grants.exactly(world.namespace_id, "agent_revision", first.deployment_id)
    grant(db, reader, "agent_revision:read", **only_first)

    assert revision_ids(db, reader, view) == [first.deployment_id]
    assert revision_ids(db, admin, view) == [second.deployment_id, first.deployment_id]
    with pytest.raises(errors.NotFound):
        revision(db, reader, view, second.deployment_id)
    other = create(db, admin, world, name="other")
    with pytest.raises(errors.NotFound):  # a revision of another Agent
        revision_reads.get_deployment(
            db,
            actor_id=admin,
            namespace_id=world.namespace_id,
            agent_id=other.id,
            deployment_id=first.deployment_id,
        )
    with pytest.raises(errors.NotFound):
        revision_ids(db, principal(db), view)


# -- stop and delete ----------------------------------------------------------------------------


def test_stop_enqueues_its_own_item(db: Database, admin: str, world: World) -> None:
    view = create(db, admin, world)
    deploy(db, admin, view)
    stopped = agent_lifecycle.stop_agent(
        db, admin, agent_lifecycle.StopAgent(namespace_id=world.namespace_id, agent_id=view.id)
    )
    assert stopped.desired_runtime_state == "stopped"
    [event] = [e for e in events(db, resource_id=view.id) if e.action == "agents.stop"]
    assert event.work_id is not None and event.work_id.startswith(
        f"agent:{view.id}:reconcile:stopped:"
    )
    item = work(db, event.work_id)
    assert item is not None and item.owner == values.WorkOwner(
        namespace_id=world.namespace_id, actor_id=admin, agent_id=view.id
    )
    assert event.details["previousDesiredRuntimeState"] == "running"


def fail_work(db: Database, policy: values.QueuePolicy, work_id: str) -> None:
    with db.transaction() as session:
        [dispatch] = work_claims.claim(session, policy, limit=1)
    assert dispatch.work_id == work_id
    with db.transaction() as session:
        run = work_queue.start(session, policy, dispatch)
        assert run is not None
        work_queue.fail(session, run, code="UNKNOWN_FAILURE")


def test_failed_delete_is_requeued_then_taken_over(
    db: Database, admin: str, world: World, policy: values.QueuePolicy
) -> None:
    view = create(db, admin, world)
    initiator = principal(db, "agent:delete", "agent:read", namespace_id=world.namespace_id)
    deleting = agent_lifecycle.delete_agent(
        db,
        initiator,
        agent_lifecycle.DeleteAgent(namespace_id=world.namespace_id, agent_id=view.id),
    )
    assert (deleting.status, deleting.desired_runtime_state) == ("deleting", "stopped")
    work_id = f"agent:{view.id}:reconcile:deleted"
    queued = work(db, work_id)
    # repeats while queued change nothing, whoever asks
    for actor in (initiator, admin):
        agent_lifecycle.delete_agent(
            db,
            actor,
            agent_lifecycle.DeleteAgent(namespace_id=world.namespace_id, agent_id=view.id),
        )
    assert work(db, work_id) == queued

    fail_work(db, policy, work_id)
    agent_lifecycle.delete_agent(
        db,
        initiator,
        agent_lifecycle.DeleteAgent(namespace_id=world.namespace_id, agent_id=view.id),
    )
    retry = events(db, work_id=work_id)[0]
    assert (
        retry.action,
        retry.actor_id,
        retry.details["takeover"],
        retry.details["previousReasonCode"],
    ) == ("agents.delete", initiator, False, "UNKNOWN_FAILURE")
    assert "previousActorId" not in retry.details

    fail_work(db, policy, work_id)
    delete(db, admin, view)
    item = work(db, work_id)
    assert item is not None
    assert (item.state, item.attempt_count, item.owner.actor_id) == (
        values.WorkState.QUEUED,
        0,
        admin,
    )
    takeover = events(db, work_id=work_id)[0]
    assert (
        takeover.actor_id,
        takeover.details["takeover"],
        takeover.details["previousActorId"],
    ) == (admin, True, initiator)

    reader = principal(db, "agent:read", namespace_id=world.namespace_id)
    with pytest.raises(errors.Forbidden):
        agent_lifecycle.delete_agent(
            db,
            reader,
            agent_lifecycle.DeleteAgent(namespace_id=world.namespace_id, agent_id=view.id),
        )


def test_delete_work_of_another_actor_conflicts(db: Database, admin: str, world: World) -> None:
    """An operator's repair put a deleting Agent back to active while its deletion work is
    still queued for someone else: a new delete must not silently adopt that work."""
    view = create(db, admin, world)
    delete(db, admin, view)
    with db.transaction() as session:
        session.execute(
            sa.update(models.Agent).where(models.Agent.id == view.id).values(status="active")
        )
    other = principal(db, "agent:delete", "agent:read", namespace_id=world.namespace_id)

    with pytest.raises(errors.IdempotencyConflict):
        agent_lifecycle.delete_agent(
            db,
            other,
            agent_lifecycle.DeleteAgent(namespace_id=world.namespace_id, agent_id=view.id),
        )
    assert (
        agents.get_agent(
            db, actor_id=admin, namespace_id=world.namespace_id, agent_id=view.id
        ).status
        == "active"
    )


# -- the deployment-status projection (pure) ----------------------------------------------------

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
AGENT_ID, REVISION_ID, NAMESPACE_ID = (
    ids.new("agent"),
    ids.new("agent_revision"),
    ids.new("namespace"),
)


def agent_row(*, active: str | None, desired: str = "running") -> agent_rows.Agent:
    return agent_rows.Agent(
        id=AGENT_ID,
        namespace_id=NAMESPACE_ID,
        name="a",
        configuration_id=ids.new("configuration"),
        harness_id="openclaw",
        harness_version="1",
        execution_mode=("embedded"),
        harness_auth_secret_id=None,
        compute_driver="local",
        service_principal_id=ids.new("principal"),
        status=agent_rows.AgentStatus.ACTIVE,
        desired_runtime_state=agent_rows.DesiredRuntimeState(desired),
        active_revision_id=active,
        created_at=NOW,
        updated_at=NOW,
    )


def work_item(
    state: values.WorkState,
    code: str | None = None,
    result: dict[str, Any] | None = None,
    *,
    progress: str | None = None,
) -> values.WorkItem:
    return values.WorkItem(
        id=f"agent_revision:{REVISION_ID}:reconcile",
        key=work_keys.revision_reconcile(REVISION_ID),
        owner=values.WorkOwner(
            namespace_id=NAMESPACE_ID,
            actor_id=ids.new("principal"),
            agent_id=AGENT_ID,
            revision_id=REVISION_ID,
        ),
        state=state,
        attempt_count=1,
        available_at=NOW + dt.timedelta(seconds=5),
        claimed=state is values.WorkState.CLAIMED,
        started=False,
        lease_expires_at=None,
        completed_at=None,
        reason_code=code,
        result_data=result,
        last_progress_code=progress,
        last_progress_at=NOW if progress else None,
        created_at=NOW,
        updated_at=NOW,
    )


S = values.WorkState
WARNING = {"code": "SLOW_START", "detail": "took 30s"}


@pytest.mark.parametrize(
    ("item", "active", "desired", "state"),
    [
        (work_item(S.QUEUED), None, "running", "pending"),
        (work_item(S.CLAIMED, progress="REVISION_INCOMPLETE"), None, "running", "pending"),
        (work_item(S.SUCCEEDED, "REVISION_ACTIVATED"), REVISION_ID, "running", "active"),
        (work_item(S.SUCCEEDED, "REVISION_ALREADY_ACTIVE"), REVISION_ID, "running", "active"),
        (
            work_item(S.SUCCEEDED, "REVISION_ACTIVATED"),
            ids.new("agent_revision"),
            "running",
            "superseded",
        ),
        (work_item(S.SUCCEEDED, "REVISION_ACTIVATED"), None, "stopped", "stopped"),
        (work_item(S.SUCCEEDED, "REVISION_SUPERSEDED"), None, "running", "superseded"),
        (work_item(S.SUCCEEDED, "REVISION_STOPPED"), None, "stopped", "stopped"),
        (work_item(S.SUCCEEDED, "SUPERSEDED_TARGET"), None, "running", "failed"),
        (work_item(S.FAILED_PERMANENT, "AUTHORIZATION_DENIED"), None, "running", "failed"),
    ],
)
def test_projection_states(
    item: values.WorkItem, active: str | None, desired: str, state: str
) -> None:
    view = deployment_status.project(item, agent_row(active=active, desired=desired))
    assert (view.deployment_id, view.agent_id, view.namespace_id) == (
        REVISION_ID,
        AGENT_ID,
        NAMESPACE_ID,
    )
    assert view.state == state
    assert view.reason_code == item.reason_code
    assert (view.error is not None) == (state == "failed")
    assert (view.progress is not None) == (state == "pending")


def test_projection_details() -> None:
    queued = deployment_status.project(
        work_item(S.QUEUED, progress="LEASE_EXPIRED"), agent_row(active=None)
    )
    assert queued.progress == deployment_status.Progress(
        "LEASE_EXPIRED", NOW, NOW + dt.timedelta(seconds=5)
    )
    claimed = deployment_status.project(work_item(S.CLAIMED), agent_row(active=None))
    assert claimed.progress == deployment_status.Progress(None, None, None)

    active = deployment_status.project(
        work_item(S.SUCCEEDED, "REVISION_ACTIVATED", {"warnings": [WARNING]}),
        agent_row(active=REVISION_ID),
    )
    assert (active.warnings, active.error, active.progress) == ((WARNING,), None, None)

    failed = deployment_status.project(
        work_item(S.FAILED_PERMANENT, "CONVERGENCE_DEADLINE_EXCEEDED", {"timeoutMs": 900000}),
        agent_row(active=None),
    )
    assert failed.error == deployment_status.DeploymentError(
        "CONVERGENCE_DEADLINE_EXCEEDED",
        "The resource did not converge before the deadline.",
        {"timeoutMs": 900000},
    )
    assert failed.warnings == ()
    unknown = deployment_status.project(
        work_item(S.FAILED_PERMANENT, "SOMETHING_NEW"), agent_row(active=None)
    )
    assert unknown.error == deployment_status.DeploymentError(
        "SOMETHING_NEW", "Reconciliation failed.", None
    )

    other_agent = dataclasses.replace(agent_row(active=None), id=ids.new("agent"))
    with pytest.raises(ValueError, match="not a deployment"):
        deployment_status.project(work_item(S.QUEUED), other_agent)
