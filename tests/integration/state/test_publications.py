"""One-statement publications against a real PostgreSQL, connected as occ_app: the same rows as
the transaction they replace, and nothing at all for a stale claim."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
import sqlalchemy as sa

from occ.foundation import errors
from occ.state import audit, models, publications, values, work_claims, work_queue
from occ.state.db import Database
from tests.support import rows


def _running(db: Database, policy: values.QueuePolicy, actor: str) -> values.Claim:
    """A started ``namespace_ready`` claim of a new provisioning Namespace."""
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=actor)
        key, owner = rows.namespace_work(namespace_id, actor, "ready")
        work_queue.enqueue(session, key, owner)
    with db.transaction() as session:
        [dispatch] = work_claims.claim(session, policy, limit=1)
        run = work_queue.start(session, policy, dispatch)
    assert run is not None
    return run


def _event(claim: values.Claim) -> dict[str, object]:
    namespace_id = claim.owner.namespace_id
    return audit.parameters(
        kind="mutation",
        action="namespaces.lifecycle.ensure",
        actor_id=claim.owner.actor_id,
        outcome="success",
        namespace_id=namespace_id,
        resource_kind="namespace",
        resource_id=namespace_id,
        work_id=claim.work_id,
        details={"reasonCode": "NAMESPACE_READY"},
    )


def _publish(db: Database, claim: values.Claim) -> bool:
    with db.autocommit() as session:
        return publications.complete_namespace_ready(
            session, claim, code="NAMESPACE_READY", event=_event(claim)
        )


def _state(db: Database, claim: values.Claim) -> tuple[str, str, list[tuple[str, str]]]:
    with db.snapshot() as session:
        work = session.get(models.ControllerWork, claim.work_id)
        namespace = session.get(models.Namespace, claim.owner.namespace_id)
        events = session.execute(
            sa.select(models.AuditEvent.action, models.AuditEvent.details["reasonCode"].astext)
            .where(models.AuditEvent.work_id == claim.work_id)
            .order_by(models.AuditEvent.sequence)
        ).all()
    assert work is not None and namespace is not None
    return work.state, namespace.status, [(action, code) for action, code in events]


def test_a_live_claim_completes_moves_the_namespace_and_audits_in_order(
    db: Database, policy: values.QueuePolicy, actor: str
) -> None:
    claim = _running(db, policy, actor)
    assert _publish(db, claim) is True
    assert _state(db, claim) == (
        "succeeded",
        "ready",
        [("reconcile", "NAMESPACE_READY"), ("namespaces.lifecycle.ensure", "NAMESPACE_READY")],
    )


def test_a_stale_token_changes_nothing(
    db: Database, policy: values.QueuePolicy, actor: str
) -> None:
    claim = _running(db, policy, actor)
    stale = dataclasses.replace(claim, token=uuid.uuid4())
    with pytest.raises(errors.ClaimLost):
        _publish(db, stale)
    assert _state(db, claim) == ("claimed", "provisioning", [])
    assert _publish(db, claim) is True  # the live claim still publishes
    with pytest.raises(errors.ClaimLost):
        _publish(db, claim)  # and only once


def test_a_namespace_that_moved_on_stays_as_it_is(
    db: Database, policy: values.QueuePolicy, actor: str
) -> None:
    claim = _running(db, policy, actor)
    with db.transaction() as session:
        session.execute(
            sa.update(models.Namespace)
            .where(models.Namespace.id == claim.owner.namespace_id)
            .values(status="deleting")
        )
    assert _publish(db, claim) is False
    state, status, events = _state(db, claim)
    assert (state, status, len(events)) == ("succeeded", "deleting", 2)


def test_a_non_success_code_is_refused_before_any_write(
    db: Database, policy: values.QueuePolicy, actor: str
) -> None:
    claim = _running(db, policy, actor)
    with pytest.raises(ValueError), db.autocommit() as session:
        publications.complete_namespace_ready(
            session, claim, code="NAMESPACE_FAILED", event=_event(claim)
        )
    assert _state(db, claim) == ("claimed", "provisioning", [])
