"""Managed-account harness credentials for real: Celery workers, PostgreSQL, Redis, the local
driver's gateway processes and the stand-in account Backend shared through its directory.

A deploy pins the account's exact token reference and Backend binding; the worker delivers the
token like a Secret's value (the gateway reports its keyed fingerprint); a credential moved at
the Backend, or an actor who lost ``account:read``, is refused before any Compute effect.
"""

from __future__ import annotations

import functools
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import account_withdrawals, accounts, agents, deployments, installation
from occ.drivers.account import standin
from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import errors, fingerprints
from occ.state import agents as agent_rows
from occ.state import models
from occ.state import restrictions as restriction_rows
from occ.state.db import Database
from tests.support import namespace_status, processes, worker_worlds, worlds
from tests.support.processes import wait_for

FINGERPRINT_KEY = "managed-account-test-fingerprint-key"

pytestmark = pytest.mark.usefixtures("control")


@pytest.fixture
def installed(db: Database) -> None:
    installation.bootstrap_installation(db, name="accounts", admin_name="admin")


@pytest.fixture
def backend_root(tmp_path: Path) -> Path:
    return tmp_path / "accounts"


@pytest.fixture
def account_env(env: dict[str, str], backend_root: Path) -> dict[str, str]:
    env.update(
        OCC_ACCOUNT_BACKEND="standin",
        OCC_ACCOUNT_BACKEND_ROOT=str(backend_root),
        OCC_FINGERPRINT_KEY=FINGERPRINT_KEY,
    )
    return env


@pytest.fixture
def control(
    account_env: dict[str, str], fleet: processes.Fleet, installed: None
) -> processes.Process:
    return fleet.control_worker()


def _world(db: Database, env: dict[str, str], backend: standin.StandinBackend) -> worlds.World:
    """An Agent whose harness authentication is a managed account of its Namespace."""
    admin = worlds.installation_admin(db, "accounts")
    namespace_id = namespace_status.created_ready(db, admin=admin)
    world = worlds.make(
        db,
        admin=admin,
        namespace_id=namespace_id,
        compute_driver="local",
        store=worker_worlds.store(env),
        secret_value="sk-unused-secret",
    )
    account = accounts.issue_account(
        db,
        admin,
        accounts.IssueAccount(namespace_id=namespace_id, name="codex", workspace="research"),
        backend=backend,
    )
    agents.update_agent(
        db,
        admin,
        agents.UpdateAgent(
            namespace_id=namespace_id,
            agent_id=world.agent_id,
            harness_auth=agent_rows.HarnessAuth(agent_rows.ACCOUNT_SOURCE, account_id=account.id),
        ),
    )
    return world


def _account_id(db: Database, world: worlds.World) -> str:
    agent = worlds.agent(db, world)
    assert agent.harness_auth_account_id is not None
    return agent.harness_auth_account_id


def _deploy(db: Database, world: worlds.World, backend: standin.StandinBackend) -> str:
    accepted = deployments.deploy_agent(
        db,
        world.admin,
        deployments.Deploy(namespace_id=world.namespace_id, agent_id=world.agent_id),
        accounts=backend,
    )
    return accepted.deployment_id


def _pinned(db: Database, revision_id: str) -> dict[str, Any]:
    with db.transaction() as session:
        pinned: dict[str, Any] = session.execute(
            sa.select(models.AgentRevision.harness_auth).where(
                models.AgentRevision.id == revision_id
            )
        ).scalar_one()
    return pinned


def _health(endpoint: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{endpoint}/healthz", timeout=2) as response:
        body: dict[str, Any] = json.loads(response.read())
        return body


def _denials(db: Database, revision_id: str) -> list[tuple[str, str, str]]:
    with db.transaction() as session:
        rows = session.execute(
            sa.select(
                models.AuditEvent.action,
                models.AuditEvent.resource_kind,
                models.AuditEvent.details["reasonCode"].astext,
            ).where(
                models.AuditEvent.kind == "authorization_denial",
                models.AuditEvent.work_id == f"agent_revision:{revision_id}:reconcile",
            )
        ).all()
    return [(row[0], row[1], row[2]) for row in rows]


def test_a_deploy_pins_the_token_reference_and_delivers_the_token(
    db: Database,
    account_env: dict[str, str],
    fleet: processes.Fleet,
    backend_root: Path,
) -> None:
    backend = standin.StandinBackend(backend_root)
    world = _world(db, account_env, backend)
    account_id = _account_id(db, world)
    reference = backend.current_token(account_id)
    assert reference is not None
    revision_id = _deploy(db, world, backend)
    assert _pinned(db, revision_id) == {
        "kind": "managedAccount",
        "accountId": account_id,
        "tokenReference": reference,
        "backendId": backend.backend_id,
        "driver": "standin",
        "workspace": "research",
    }
    # a rotation after the deploy never changes what the revision pinned
    backend.rotate(account_id)

    fleet.worker("drivers")
    processes.nudge(account_env)
    wait_for(
        lambda: worlds.state_is(db, world, revision_id, "active"),
        timeout=30,
        message="the managed-account revision to become active",
    )
    endpoint = worlds.agent(db, world).endpoint
    assert endpoint is not None
    expected = fingerprints.of(
        backend.token_value(reference), fingerprints.revision_key(FINGERPRINT_KEY, revision_id)
    )
    assert _health(endpoint)["credentialFingerprint"] == expected
    token = backend.token_value(reference)
    with db.transaction() as session:
        stored = session.execute(
            sa.text("SELECT coalesce(string_agg(details::text, ' '), '') FROM occ.audit_events")
        ).scalar_one()
        work = session.execute(
            sa.text(
                "SELECT coalesce(string_agg(row_to_json(w)::text, ' '), '') "
                "FROM occ.controller_work w"
            )
        ).scalar_one()
    assert token not in stored and token not in work


def test_a_credential_moved_at_the_backend_is_refused_before_effects(
    db: Database,
    account_env: dict[str, str],
    fleet: processes.Fleet,
    backend_root: Path,
    local_root: Path,
) -> None:
    backend = standin.StandinBackend(backend_root)
    world = _world(db, account_env, backend)
    revision_id = _deploy(db, world, backend)
    backend.move(_account_id(db, world), "sales")

    fleet.worker("drivers")
    processes.nudge(account_env)
    wait_for(
        lambda: worlds.state_is(db, world, revision_id, "failed"),
        timeout=30,
        message="the deployment to be refused",
    )
    assert worlds.deployment(db, world, revision_id).reason_code == "CREDENTIAL_BACKEND_MISMATCH"
    assert _denials(db, revision_id) == [
        ("agents.deploy", "account", "CREDENTIAL_BACKEND_MISMATCH")
    ]
    assert not (local_root / "agents" / world.agent_id).exists()


def test_an_actor_who_lost_account_read_is_refused_before_effects(
    db: Database,
    account_env: dict[str, str],
    fleet: processes.Fleet,
    backend_root: Path,
    local_root: Path,
) -> None:
    backend = standin.StandinBackend(backend_root)
    world = _world(db, account_env, backend)
    revision_id = _deploy(db, world, backend)
    with db.transaction() as session:
        restriction_rows.insert(
            session,
            permission="account:read",
            created_by=world.admin,
            principal_id=world.admin,
            namespace_id=world.namespace_id,
        )

    fleet.worker("drivers")
    processes.nudge(account_env)
    wait_for(
        lambda: worlds.state_is(db, world, revision_id, "failed"),
        timeout=30,
        message="the deployment to be refused",
    )
    assert worlds.deployment(db, world, revision_id).reason_code == "AUTHORIZATION_DENIED"
    # audited like every re-authorization refusal of a deploy: on the Agent
    assert _denials(db, revision_id) == [("agents.deploy", "agent", "AUTHORIZATION_DENIED")]
    assert not (local_root / "agents" / world.agent_id).exists()


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text(encoding="utf-8")


def test_a_withdrawn_account_stops_the_agent_with_its_own_work_and_audit(
    db: Database,
    account_env: dict[str, str],
    fleet: processes.Fleet,
    backend_root: Path,
    local_root: Path,
) -> None:
    backend = standin.StandinBackend(backend_root)
    world = _world(db, account_env, backend)
    account_id = _account_id(db, world)
    revision_id = _deploy(db, world, backend)
    fleet.worker("drivers")
    processes.nudge(account_env)
    wait_for(
        lambda: worlds.state_is(db, world, revision_id, "active"),
        timeout=30,
        message="the managed-account revision to become active",
    )
    pid = LocalComputeDriver(local_root).revision_process(world.agent_id, revision_id)
    assert _alive(pid)

    record = functools.partial(
        account_withdrawals.record_withdrawal,
        db,
        world.admin,
        namespace_id=world.namespace_id,
        account_id=account_id,
        backend=backend,
    )
    with pytest.raises(errors.Conflict):  # occ asks the Backend, never takes it on trust
        record()
    backend.withdraw(account_id)
    recorded = record()
    assert recorded.agent_ids == (world.agent_id,) and recorded.account.withdrawn
    work_id = f"agent:{world.agent_id}:withdrawal:{account_id}"
    processes.nudge(account_env)

    def stopped() -> bool:
        return worlds.agent(db, world).active_revision_id is None and not _alive(pid)

    wait_for(stopped, timeout=30, message="the withdrawal to stop the Agent")
    with db.transaction() as session:
        work = session.execute(
            sa.select(
                models.ControllerWork.kind,
                models.ControllerWork.state,
                models.ControllerWork.reason_code,
            ).where(models.ControllerWork.id == work_id)
        ).one()
        events = session.execute(
            sa.select(models.AuditEvent.action, models.AuditEvent.details["reasonCode"].astext)
            .where(models.AuditEvent.work_id == work_id)
            .order_by(models.AuditEvent.sequence)
        ).all()
    assert tuple(work) == ("credential_source_withdrawal", "succeeded", "AGENT_STOPPED")
    assert ("agents.credential_source_withdrawal", "AGENT_STOPPED") in [tuple(e) for e in events]
    assert worlds.agent(db, world).desired_runtime_state == "stopped"
    assert record().agent_ids == ()  # a repeat admits nothing: no Agent runs on it any more
