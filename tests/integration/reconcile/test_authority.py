"""Agent stop and delete work run in-process: the original actor is re-authorized under the
claim, and a refusal fails the item and audits the denial before any Compute call."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ import secret_store
from occ.config import Settings
from occ.controller import agent_lifecycle, installation, namespaces
from occ.db import Database
from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor
from occ.reconcile.environment import Worker
from occ.state import models, values
from occ.state import namespaces as namespace_rows
from occ.state import restrictions as restriction_rows
from tests.support import worlds

POLICY = values.QueuePolicy()

Admit = Callable[..., object]


@pytest.mark.parametrize(
    ("admit", "permission", "action"),
    [
        (agent_lifecycle.stop_agent, "agent:operate", "agents.stop"),
        (agent_lifecycle.delete_agent, "agent:delete", "agents.delete"),
    ],
    ids=["stop", "delete"],
)
def test_an_actor_refused_after_admission_fails_the_item_without_compute(
    db: Database, tmp_path: Path, admit: Admit, permission: str, action: str
) -> None:
    boot = installation.bootstrap_installation(db, name="a", admin_name="admin")
    admin = boot.admin_principal_id
    assert admin is not None
    namespace_id = namespaces.create_namespace(db, actor_id=admin, name="team").id
    with db.transaction() as session:
        namespace_rows.transition(session, namespace_id, expected="provisioning", status="ready")
        session.execute(  # the Namespace's own item is done
            sa.update(models.ControllerWork).values(
                state="succeeded",
                completed_at=sa.func.clock_timestamp(),
                reason_code="NAMESPACE_READY",
            )
        )
    world = worlds.make(
        db,
        admin=admin,
        namespace_id=namespace_id,
        compute_driver="local",
        store=secret_store.SecretStore.from_settings(Settings()),
        secret_value="v",
    )
    admit(db, actor_id=admin, namespace_id=namespace_id, agent_id=world.agent_id)
    with db.transaction() as session:  # allowed at admission, no longer when the worker runs
        restriction_rows.insert(
            session,
            permission=permission,
            created_by=admin,
            principal_id=admin,
            namespace_id=namespace_id,
        )
    driver = LocalComputeDriver(tmp_path / "local")
    worker = Worker(
        database=db, policy=POLICY, driver=driver, shutdown=threading.Event(), settings=Settings()
    )
    [claim] = executor.claim_batch(db, POLICY, max_in_flight=5)

    result = executor.run(worker, claim.work_id, str(claim.token))

    assert result is not None and result.code == "AUTHORIZATION_DENIED"
    assert driver.effects() == []
    with db.transaction() as session:
        work = session.get(models.ControllerWork, claim.work_id)
        denials = (
            session.execute(
                sa.select(models.AuditEvent.action).where(
                    models.AuditEvent.kind == "authorization_denial",
                    models.AuditEvent.work_id == claim.work_id,
                )
            )
            .scalars()
            .all()
        )
    assert work is not None and work.state == "failed_permanent"
    assert denials == [action]
