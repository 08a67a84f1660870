"""Deploy admission on real PostgreSQL under concurrency: deploys of one Agent from many
clients, each on its own connection, get unique gap-free revision numbers, one revision, one
work item and one audit event each; a refused deploy gives its number back; authorization runs
before the Agent row lock (one policy load per principal) and a draft changed meanwhile is
checked again under the lock."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import agent_lifecycle, agents, deployments, installation
from occ.drivers.configuration import filesystem
from occ.drivers.sandbox import reference
from occ.foundation import errors, harnesses, ids
from occ.state import agents as agent_rows
from occ.state import audit, configurations, models, revisions, work_keys
from occ.state.db import Database
from tests.support import databases, grants, locks, processes, rows, statements

THREADS = 8
DEPLOYS_PER_THREAD = 5


@dataclass(frozen=True)
class World:
    admin_id: str
    namespace_id: str
    configuration_id: str
    secret_id: str
    agent: agent_rows.Agent


@pytest.fixture
def world(db: Database) -> World:
    boot = installation.bootstrap_installation(db, name="test", admin_name="admin")
    assert boot.admin_principal_id is not None
    admin_id = boot.admin_principal_id
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=admin_id, status="ready")
        configuration_id, secret_id = add_configuration(session, namespace_id, "config")
    agent = agents.create_agent(
        db,
        admin_id,
        agents.CreateAgent(
            namespace_id=namespace_id,
            name="helper",
            configuration_id=configuration_id,
            harness=agent_rows.Harness("openclaw", "1.2.3"),
            execution_mode=harnesses.ExecutionMode.EMBEDDED,
            harness_auth=agent_rows.HarnessAuth("secret", secret_id),
        ),
        compute_driver="local",
    )
    grants.give(
        db,
        agent.service_principal_id,
        ("configuration:read", "secret:operate"),
        namespace_id=namespace_id,
    )
    return World(admin_id, namespace_id, configuration_id, secret_id, agent)


def add_configuration(session: sa.orm.Session, namespace_id: str, name: str) -> tuple[str, str]:
    configuration_id, secret_id = ids.new("configuration"), ids.new("secret")
    session.add(
        models.Configuration(
            id=configuration_id, namespace_id=namespace_id, name=name, document={"name": name}
        )
    )
    session.add(
        models.Secret(id=secret_id, namespace_id=namespace_id, name=name, value_ciphertext=b"x")
    )
    return configuration_id, secret_id


@pytest.fixture
def clients(database_urls: databases.DatabaseUrls) -> Iterator[list[Database]]:
    """One Database (engine and connection) per client thread."""
    opened = [Database(database_urls.app, pool_size=1) for _ in range(THREADS)]
    try:
        yield opened
    finally:
        for client in opened:
            client.dispose()


def deploy(db: Database, world: World, actor_id: str | None = None) -> deployments.DeployAccepted:
    return deployments.deploy_agent(
        db,
        actor_id or world.admin_id,
        deployments.Deploy(namespace_id=world.namespace_id, agent_id=world.agent.id),
    )


def revision_numbers(db: Database, agent_id: str) -> list[int]:
    with db.transaction() as session:
        return [
            revision.revision_number for revision in revisions.list_revisions(session, agent_id)
        ]


def revision_counter(db: Database, agent_id: str) -> int:
    with db.transaction() as session:
        return int(
            session.execute(
                sa.text("SELECT revision_counter FROM occ.agents WHERE id = :id"), {"id": agent_id}
            ).scalar_one()
        )


def deploy_events(db: Database, world: World) -> list[audit.AuditEvent]:
    with db.transaction() as session:
        found = audit.list_events(session, resource_id=world.agent.id, limit=1000)
    return [event for event in found if event.action == "agents.deploy"]


def test_concurrent_deploys_from_many_connections_are_serialised(
    db: Database, world: World, clients: list[Database]
) -> None:
    accepted: list[deployments.DeployAccepted] = []
    failures: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def client(database: Database) -> None:
        try:
            barrier.wait()
            for _ in range(DEPLOYS_PER_THREAD):
                accepted.append(deploy(database, world))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=client, args=(database,)) for database in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    total = THREADS * DEPLOYS_PER_THREAD
    assert failures == []
    assert sorted(a.revision.revision_number for a in accepted) == list(range(1, total + 1))
    assert len({a.deployment_id for a in accepted}) == total
    assert sorted(revision_numbers(db, world.agent.id)) == list(range(1, total + 1))
    assert revision_counter(db, world.agent.id) == total
    with db.transaction() as session:
        work_ids = set(
            session.execute(
                sa.select(models.ControllerWork.id).where(
                    models.ControllerWork.agent_id == world.agent.id
                )
            ).scalars()
        )
    assert work_ids == {str(work_keys.revision_reconcile(a.deployment_id)) for a in accepted}
    events = deploy_events(db, world)
    assert sorted(event.details["revisionNumber"] for event in events) == list(range(1, total + 1))
    # the desired state moved under the lock: exactly the first deploy found it stopped
    previous = [event.details["previousDesiredRuntimeState"] for event in events]
    assert previous.count("stopped") == 1
    assert previous.count("running") == total - 1
    stopped_first = next(e for e in events if e.details["previousDesiredRuntimeState"] == "stopped")
    assert stopped_first.details["revisionNumber"] == 1


def test_refused_deploys_give_their_number_back(db: Database, world: World) -> None:
    assert deploy(db, world).revision.revision_number == 1
    with db.transaction() as session:
        stranger = rows.principal(session)
        grants.grant(session, stranger, ("agent:read",), namespace_id=world.namespace_id)
    with pytest.raises(errors.Forbidden):
        deploy(db, world, stranger)
    assert revision_counter(db, world.agent.id) == 1
    assert deploy(db, world).revision.revision_number == 2

    agent_lifecycle.delete_agent(
        db,
        world.admin_id,
        agent_lifecycle.DeleteAgent(namespace_id=world.namespace_id, agent_id=world.agent.id),
    )
    with pytest.raises(errors.AgentDeleting):
        deploy(db, world)
    assert revision_counter(db, world.agent.id) == 2
    assert revision_numbers(db, world.agent.id) == [2, 1]


def test_one_policy_load_per_principal_and_one_statement_under_the_agent_lock(
    db: Database, world: World
) -> None:
    deploy(db, world)  # the Agent is running now; the next deploy is the steady case
    with statements.recorded(db) as ran:
        deploy(db, world)

    policy_loads = [s for s in ran if "FROM occ.principals p" in s]
    assert len(policy_loads) == 1  # the caller's and the service principal's, together
    locking = [s for s in ran if "FOR UPDATE" in s]
    assert len(locking) == 1
    # the lock is taken by the last statement, which writes the revision, the work item and
    # the audit event: one round trip and the commit under the lock
    assert ran[-1] == locking[0]
    assert "SELECT id, desired_runtime_state FROM occ.agents" in locking[0]
    for write in (
        "INSERT INTO occ.agent_revisions",
        "INSERT INTO occ.controller_work",
        "occ.append_audit_event",
    ):
        assert write in locking[0]


def test_a_steady_deploy_is_four_statements_the_namespace_read_with_its_agent(
    db: Database, world: World
) -> None:
    deploy(db, world)
    with statements.recorded(db) as ran:
        deploy(db, world)

    # the Namespace under its shared lock with the Agent, the policies, the Configuration,
    # the write
    assert len(ran) == 4
    assert "FOR SHARE OF namespaces" in ran[0]
    assert "LEFT OUTER JOIN occ.agents" in ran[0]


def test_the_namespace_read_with_an_agent_holds_the_namespaces_shared_lock(
    db: Database, owner_db: Database, world: World
) -> None:
    nowait = sa.text("SELECT id FROM occ.namespaces WHERE id = :id FOR UPDATE NOWAIT")
    other = ids.new("agent")
    with db.transaction() as session:
        namespace, agent = agent_rows.lock_namespace_reading(
            session, world.namespace_id, world.agent.id
        )
        assert namespace == agent_rows.lock_namespace(session, world.namespace_id)
        assert agent == agent_rows.get(session, world.namespace_id, world.agent.id)
        assert agent_rows.lock_namespace_reading(session, world.namespace_id, other) == (
            namespace,
            None,
        )
        assert agent_rows.lock_namespace_reading(session, ids.new("namespace"), other) == (
            None,
            None,
        )
        # a deletion's exclusive lock must wait for the admission
        with pytest.raises(errors.DependencyUnavailable) as raised, owner_db.transaction() as admin:
            admin.execute(nowait, {"id": world.namespace_id})
        lock_not_available = getattr(raised.value.__cause__, "orig", None)
        assert getattr(lock_not_available, "sqlstate", None) == "55P03"
    with owner_db.transaction() as admin:
        admin.execute(nowait, {"id": world.namespace_id})


def test_an_agent_of_another_namespace_is_not_found(db: Database, world: World) -> None:
    with db.transaction() as session:
        elsewhere = rows.namespace(session, created_by=world.admin_id, status="ready")

    with pytest.raises(errors.NotFound):
        deployments.deploy_agent(
            db, world.admin_id, deployments.Deploy(namespace_id=elsewhere, agent_id=world.agent.id)
        )


def test_a_draft_changed_before_the_lock_is_checked_again_under_it(
    db: Database, owner_db: Database, world: World
) -> None:
    with db.transaction() as session:
        new_configuration, _ = add_configuration(session, world.namespace_id, "newer")
    outcome: list[Any] = []

    holder = db.engine.connect()
    try:
        transaction = holder.begin()
        holder.execute(
            sa.text("SELECT 1 FROM occ.agents WHERE id = :id FOR UPDATE"), {"id": world.agent.id}
        )

        def deployer() -> None:
            try:
                outcome.append(deploy(db, world))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=deployer)
        thread.start()
        processes.wait_for(
            lambda: locks.waiters(owner_db) > 0,
            timeout=10,
            message="the deploy waiting on the Agent row lock",
        )
        holder.execute(
            sa.text(
                "UPDATE occ.agents SET configuration_id = :configuration, "
                "updated_at = clock_timestamp() WHERE id = :id"
            ),
            {"configuration": new_configuration, "id": world.agent.id},
        )
        transaction.commit()
    finally:
        holder.close()
    thread.join(timeout=30)
    assert not thread.is_alive()

    [accepted] = outcome
    assert isinstance(accepted, deployments.DeployAccepted), accepted
    assert accepted.revision.configuration_id == new_configuration
    assert accepted.revision.configuration_document == {"name": "newer"}
    [event] = deploy_events(db, world)
    assert event.details["configurationId"] == new_configuration


def test_a_selected_sandbox_pins_its_transformed_copy_under_the_source_identity(
    db: Database, world: World
) -> None:
    sandbox = reference.ReferenceSandbox(["api.example.com"])
    accepted = deployments.deploy_agent(
        db,
        world.admin_id,
        deployments.Deploy(namespace_id=world.namespace_id, agent_id=world.agent.id),
        sandbox=sandbox,
    )
    revision = accepted.revision
    assert revision.configuration_document == sandbox.transform({"name": "config"})
    assert revision.configuration_id == world.configuration_id
    assert revision.configuration_generation == 1
    with db.transaction() as session:
        native = configurations.get(session, world.namespace_id, world.configuration_id)
    assert native is not None and native.document == {"name": "config"}  # the source is kept
    [event] = deploy_events(db, world)
    assert event.details["sandboxDriver"] == "reference"
    assert deploy(db, world).revision.configuration_document == {"name": "config"}


def test_a_sandboxed_copy_that_fails_validation_is_refused(db: Database, world: World) -> None:
    class Oversized:
        id = "oversized"

        def transform(self, document: Any) -> dict[str, Any]:
            return {**document, "padding": "x" * (70 * 1024)}

    with pytest.raises(errors.InvalidInput) as raised:
        deployments.deploy_agent(
            db,
            world.admin_id,
            deployments.Deploy(namespace_id=world.namespace_id, agent_id=world.agent.id),
            sandbox=Oversized(),
        )
    assert raised.value.errors[0].path == ("configuration", "document")
    assert revision_numbers(db, world.agent.id) == []


def test_a_bodyless_deploy_reads_the_native_document_through_the_configuration_driver(
    db: Database, world: World, tmp_path: Path
) -> None:
    store = filesystem.FilesystemConfigurations(tmp_path / "configurations")
    stored = store.keep(world.namespace_id, world.configuration_id, 1, {"model": "from-a-file"})
    with db.transaction() as session:
        session.execute(
            sa.update(models.Configuration)
            .where(models.Configuration.id == world.configuration_id)
            .values(document=stored)
        )
    with pytest.raises(errors.DependencyUnavailable):  # the row names a driver not selected
        deploy(db, world)
    assert revision_numbers(db, world.agent.id) == []

    accepted = deployments.deploy_agent(
        db,
        world.admin_id,
        deployments.Deploy(namespace_id=world.namespace_id, agent_id=world.agent.id),
        configuration_store=store,
        sandbox=reference.ReferenceSandbox(),
    )
    document = accepted.revision.configuration_document
    assert document["model"] == "from-a-file"
    assert document["sandbox"]["egress"] == {"allow": []}
