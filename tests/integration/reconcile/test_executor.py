"""The executor's recovery and dispatch: kinds' terminal-failure effects commit with the work."""

from __future__ import annotations

import dataclasses

import sqlalchemy as sa

from occ.controller import installation, namespaces
from occ.reconcile import executor
from occ.state import models, values, work_queue
from occ.state.db import Database

POLICY = values.QueuePolicy(max_attempts=1)


def _admit_namespace(db: Database) -> str:
    boot = installation.bootstrap_installation(db, name="n", admin_name="admin")
    assert boot.admin_principal_id is not None
    return namespaces.create_namespace(
        db, boot.admin_principal_id, namespaces.CreateNamespace(name="team")
    ).id


def _start_the_one_item(db: Database, policy: values.QueuePolicy) -> values.Claim:
    """Claim and start the one admitted item, as a worker about to die with it would."""
    [dispatch] = executor.claim_batch(db, policy, max_in_flight=5)
    with db.transaction() as session:
        assert work_queue.start(session, policy, dispatch) is not None
    return dispatch


def _expire(owner_db: Database) -> None:
    with owner_db.transaction() as session:
        session.execute(
            sa.text(
                "UPDATE occ.controller_work "
                "SET lease_expires_at = clock_timestamp() - interval '1 s' WHERE state = 'claimed'"
            )
        )


def _namespace_and_audits(db: Database, namespace_id: str) -> tuple[str, list[tuple[str, str]]]:
    with db.transaction() as session:
        status = session.execute(
            sa.select(models.Namespace.status).where(models.Namespace.id == namespace_id)
        ).scalar_one()
        audits = session.execute(
            sa.select(models.AuditEvent.action, models.AuditEvent.outcome)
            .where(models.AuditEvent.namespace_id == namespace_id)
            .order_by(models.AuditEvent.sequence)
        ).all()
    return status, [(action, outcome) for action, outcome in audits]


def test_recovery_fails_a_provisioning_namespace_with_its_last_lease(
    db: Database, owner_db: Database
) -> None:
    namespace_id = _admit_namespace(db)
    dispatch = _start_the_one_item(db, POLICY)
    _expire(owner_db)

    report = executor.recover(db, POLICY)

    assert report.failed == (dispatch.work_id,)
    status, audits = _namespace_and_audits(db, namespace_id)
    assert status == "failed"
    assert audits[-2:] == [("reconcile", "failure"), ("namespaces.lifecycle.ensure", "failure")]


def test_recovery_of_an_exhausted_item_fails_its_namespace_too(
    db: Database, owner_db: Database
) -> None:
    namespace_id = _admit_namespace(db)
    generous = dataclasses.replace(POLICY, max_attempts=5)
    [dispatch] = executor.claim_batch(db, generous, max_in_flight=5)
    with db.transaction() as session:
        run = work_queue.start(session, generous, dispatch)
        assert run is not None
        work_queue.retry(session, generous, run, code="DEPENDENCY_UNAVAILABLE")

    report = executor.recover(db, POLICY)  # an operator lowered the limit to 1

    assert report.exhausted == (dispatch.work_id,)
    status, _ = _namespace_and_audits(db, namespace_id)
    assert status == "failed"


def test_recovery_that_only_requeues_leaves_the_namespace_alone(
    db: Database, owner_db: Database
) -> None:
    namespace_id = _admit_namespace(db)
    generous = dataclasses.replace(POLICY, max_attempts=5)
    dispatch = _start_the_one_item(db, generous)
    _expire(owner_db)

    report = executor.recover(db, generous)

    assert report.requeued == (dispatch.work_id,) and report.failed_items == ()
    assert _namespace_and_audits(db, namespace_id)[0] == "provisioning"
