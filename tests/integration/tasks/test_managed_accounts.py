"""Managed-account harness credentials for real: Celery workers, PostgreSQL, Redis, the local
driver's gateway processes and the stand-in account Backend shared through its directory.

A deploy pins the account's exact token reference and Backend binding; the worker delivers the
token like a Secret's value (the gateway reports its keyed fingerprint); a credential moved at
the Backend, or an actor who lost ``account:read``, is refused before any Compute effect.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import account_withdrawals, installation
from occ.drivers.account import standin
from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import errors, fingerprints
from occ.state import models
from occ.state.db import Database
from tests.support import audits, gateways, processes, work_items, worker_worlds, worlds
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
    [world] = worker_worlds.ready(db, env, admin=admin, secret_value="sk-unused-secret")
    worlds.use_managed_account(db, world, backend)
    return world


def _account_id(db: Database, world: worlds.World) -> str:
    agent = worlds.agent(db, world)
    assert agent.harness_auth_account_id is not None
    return agent.harness_auth_account_id


def _run_drivers_until(
    db: Database,
    env: dict[str, str],
    fleet: processes.Fleet,
    world: worlds.World,
    revision_id: str,
    state: str,
) -> None:
    """Start a drivers worker, wake the workers and wait for the deployment to reach ``state``."""
    fleet.worker("drivers")
    processes.nudge(env)
    worker_worlds.wait_state(db, world, revision_id, state, "the managed-account revision")


def _pinned(db: Database, revision_id: str) -> dict[str, Any]:
    with db.transaction() as session:
        pinned: dict[str, Any] = session.execute(
            sa.select(models.AgentRevision.harness_auth).where(
                models.AgentRevision.id == revision_id
            )
        ).scalar_one()
    return pinned


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
    revision_id = worlds.deploy(db, world, accounts=backend)
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

    _run_drivers_until(db, account_env, fleet, world, revision_id, "active")
    endpoint = worlds.agent(db, world).endpoint
    assert endpoint is not None
    expected = fingerprints.of(
        backend.token_value(reference), fingerprints.revision_key(FINGERPRINT_KEY, revision_id)
    )
    assert gateways.health(endpoint)["credentialFingerprint"] == expected
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


def _move_to_another_workspace(
    db: Database, world: worlds.World, backend: standin.StandinBackend
) -> None:
    backend.move(_account_id(db, world), "sales")


def _take_account_read(db: Database, world: worlds.World, backend: standin.StandinBackend) -> None:
    worlds.restrict_admin(db, world, "account:read")


@pytest.mark.parametrize(
    ("spoil", "denial"),
    [
        pytest.param(
            _move_to_another_workspace,
            ("agents.deploy", "account", "CREDENTIAL_BACKEND_MISMATCH"),
            id="credential-moved-at-the-backend",
        ),
        # audited like every re-authorization refusal of a deploy: on the Agent
        pytest.param(
            _take_account_read,
            ("agents.deploy", "agent", "AUTHORIZATION_DENIED"),
            id="actor-lost-account-read",
        ),
    ],
)
def test_a_spoiled_credential_is_refused_before_effects(
    db: Database,
    account_env: dict[str, str],
    fleet: processes.Fleet,
    backend_root: Path,
    local_root: Path,
    spoil: Callable[[Database, worlds.World, standin.StandinBackend], None],
    denial: tuple[str, str, str],
) -> None:
    backend = standin.StandinBackend(backend_root)
    world = _world(db, account_env, backend)
    revision_id = worlds.deploy(db, world, accounts=backend)
    spoil(db, world, backend)

    _run_drivers_until(db, account_env, fleet, world, revision_id, "failed")
    assert worlds.deployment(db, world, revision_id).reason_code == denial[2]
    assert audits.denials(db, f"agent_revision:{revision_id}:reconcile") == [denial]
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
    revision_id = worlds.deploy(db, world, accounts=backend)
    _run_drivers_until(db, account_env, fleet, world, revision_id, "active")
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
    [work] = work_items.matching(db, models.ControllerWork.id == work_id)
    with db.transaction() as session:
        events = session.execute(
            sa.select(models.AuditEvent.action, models.AuditEvent.details["reasonCode"].astext)
            .where(models.AuditEvent.work_id == work_id)
            .order_by(models.AuditEvent.sequence)
        ).all()
    assert (work.kind, work.state, work.reason_code) == (
        "credential_source_withdrawal",
        "succeeded",
        "AGENT_STOPPED",
    )
    assert ("agents.credential_source_withdrawal", "AGENT_STOPPED") in [tuple(e) for e in events]
    assert worlds.agent(db, world).desired_runtime_state == "stopped"
    assert record().agent_ids == ()  # a repeat admits nothing: no Agent runs on it any more
