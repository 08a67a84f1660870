"""Helpers of the reconcile tests that run work in-process: a ready world, one item run on a
``local`` driver, and the authorization denials audited for an item."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from occ.drivers.compute.local import LocalComputeDriver
from occ.reconcile import executor, outcome
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import models, secret_store, values
from occ.state.db import Database
from tests.support import namespace_status, worlds


def ready_world(db: Database, document: dict[str, Any] | None = None) -> worlds.World:
    """An Installation, a Namespace set ready (its own work item done) and one ``local`` Agent
    in it, as the administrator made them, its configuration ``document`` (default empty)."""
    admin = worlds.installation_admin(db, "reconcile")
    namespace_id = namespace_status.created_ready(db, admin=admin)
    with db.transaction() as session:
        session.execute(
            sa.update(models.ControllerWork).values(
                state="succeeded",
                completed_at=sa.func.clock_timestamp(),
                reason_code="NAMESPACE_READY",
            )
        )
    return worlds.make(
        db,
        admin=admin,
        namespace_id=namespace_id,
        compute_driver="local",
        store=secret_store.SecretStore.from_settings(Settings()),
        secret_value="v",
        document=document or {},
    )


def run_the_one_item(
    db: Database, tmp_path: Path, policy: values.QueuePolicy
) -> tuple[LocalComputeDriver, values.Claim, outcome.PassResult | None]:
    """Claim the one queued item and run it in-process on a ``local`` driver under
    ``tmp_path``: the driver, the claim and the pass's result."""
    driver = LocalComputeDriver(tmp_path / "local")
    worker = Worker(
        database=db, policy=policy, driver=driver, shutdown=threading.Event(), settings=Settings()
    )
    [claim] = executor.claim_batch(db, policy, max_in_flight=5)
    return driver, claim, executor.run(worker, claim.work_id, str(claim.token))


def denials(db: Database, work_id: str) -> list[str]:
    """The actions of the authorization denials audited for ``work_id``."""
    with db.transaction() as session:
        return list(
            session.execute(
                sa.select(models.AuditEvent.action).where(
                    models.AuditEvent.kind == "authorization_denial",
                    models.AuditEvent.work_id == work_id,
                )
            ).scalars()
        )
