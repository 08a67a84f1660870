"""Audit events: append in the caller's transaction, read newest first, never change."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from occ.foundation import ids
from occ.state import audit
from occ.state.db import Database, violated_constraint
from tests.support import audits


def append(db: Database, **fields: Any) -> str:
    event: dict[str, Any] = {
        "kind": "mutation",
        "action": "namespaces.create",
        "actor_id": ids.new("principal"),
        "outcome": "success",
        **fields,
    }
    with db.transaction() as session:
        return audit.append(session, **event)


def test_append_then_read_back(db: Database) -> None:
    namespace_id = ids.new("namespace")
    actor = ids.new("principal")
    event_id = append(
        db,
        actor_id=actor,
        namespace_id=namespace_id,
        resource_kind="namespace",
        resource_id=namespace_id,
        work_id=f"namespace:{namespace_id}:reconcile:ready",
        details={"name": "team", "nested": {"list": [1, 2]}},
    )

    assert ids.is_valid("audit_event", event_id)
    with db.transaction() as session:
        [event] = audit.list_events(session)
    assert event.id == event_id
    assert audits.headline(event) == ("mutation", "namespaces.create", actor, "success")
    assert (event.namespace_id, event.resource_kind, event.resource_id) == (
        namespace_id,
        "namespace",
        namespace_id,
    )
    assert event.work_id == f"namespace:{namespace_id}:reconcile:ready"
    assert event.details == {"name": "team", "nested": {"list": [1, 2]}}
    assert event.occurred_at is not None
    assert (event.kind, event.outcome) == (audit.EventKind.MUTATION, audit.EventOutcome.SUCCESS)
    assert isinstance(event.kind, audit.EventKind) and isinstance(event.outcome, audit.EventOutcome)


def test_a_mutation_is_a_successful_change(db: Database) -> None:
    actor, namespace_id, secret_id = ids.new("principal"), ids.new("namespace"), ids.new("secret")
    with db.transaction() as session:
        event_id = audit.mutation(
            session,
            action="secrets.delete",
            actor_id=actor,
            namespace_id=namespace_id,
            resource_kind="secret",
            resource_id=secret_id,
            details={"name": "token"},
        )
    with db.transaction() as session:
        [event] = audit.list_events(session)
    assert (event.id, event.kind, event.outcome, event.action, event.actor_id) == (
        event_id,
        "mutation",
        "success",
        "secrets.delete",
        actor,
    )
    assert (event.namespace_id, event.resource_id, event.work_id) == (namespace_id, secret_id, None)
    assert event.details == {"name": "token"}


def test_details_default_to_an_empty_object(db: Database) -> None:
    append(db)
    with db.transaction() as session:
        [event] = audit.list_events(session)
    assert event.details == {}
    assert event.namespace_id is None and event.work_id is None


def test_newest_first_with_filters_and_paging(db: Database) -> None:
    ns_a, ns_b = ids.new("namespace"), ids.new("namespace")
    first = append(db, namespace_id=ns_a, resource_id=ns_a)
    second = append(
        db, namespace_id=ns_b, resource_id=ns_b, kind="authorization_denial", outcome="denied"
    )
    third = append(db, namespace_id=ns_a, resource_id="agt_x", work_id="w")

    with db.transaction() as session:
        everything = audit.list_events(session)
        assert [event.id for event in everything] == [third, second, first]
        assert [e.id for e in audit.list_events(session, namespace_id=ns_a)] == [third, first]
        assert [e.id for e in audit.list_events(session, resource_id=ns_b)] == [second]
        assert [e.id for e in audit.list_events(session, work_id="w")] == [third]
        assert [e.id for e in audit.list_events(session, kind="authorization_denial")] == [second]
        assert [e.id for e in audit.list_events(session, limit=2)] == [third, second]
        older = audit.list_events(session, before_sequence=everything[1].sequence)
        assert [event.id for event in older] == [first]
        with pytest.raises(ValueError, match="limit"):
            audit.list_events(session, limit=0)


def test_an_event_rolls_back_with_its_transaction(db: Database) -> None:
    with pytest.raises(RuntimeError), db.transaction() as session:
        audit.append(
            session,
            kind="mutation",
            action="namespaces.create",
            actor_id=ids.new("principal"),
            outcome="success",
        )
        raise RuntimeError("the use case failed after auditing")
    with db.transaction() as session:
        assert audit.list_events(session) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("kind", "gossip"),
        ("outcome", "maybe"),
        ("action", "Namespaces.Create"),
        ("action", ""),
    ],
)
def test_malformed_events_are_refused(db: Database, field: str, value: str) -> None:
    with pytest.raises(ValueError):
        append(db, **{field: value})


def test_events_are_append_only(db: Database, owner_db: Database) -> None:
    event_id = append(db)
    # the application role has no UPDATE or DELETE privilege at all
    for statement in (
        "UPDATE occ.audit_events SET outcome = 'failure' WHERE id = :id",
        "DELETE FROM occ.audit_events WHERE id = :id",
    ):
        with (
            pytest.raises(sa_exc.ProgrammingError, match="permission denied"),
            db.transaction() as session,
        ):
            session.execute(sa.text(statement), {"id": event_id})
    # and even the owner is stopped by the trigger
    with pytest.raises(sa_exc.DBAPIError, match="immutable"), owner_db.transaction() as session:
        session.execute(sa.text("DELETE FROM occ.audit_events WHERE id = :id"), {"id": event_id})
    with db.transaction() as session:
        assert [event.id for event in audit.list_events(session)] == [event_id]


WRITER = sa.text(
    "SELECT occ.append_audit_event('mutation', :action, :actor, NULL, NULL, NULL, NULL,"
    " 'success', NULL)"
)


def test_the_database_writer_checks_every_row_its_cached_plan_inserts(db: Database) -> None:
    """The writer is PL/pgSQL (its INSERT planned once per connection, migration 0011): every
    call on one connection still writes its own row and is checked by the table."""
    actor = ids.new("principal")
    with db.transaction() as session:
        language = session.execute(
            sa.text(
                "SELECT l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
                " WHERE p.oid = 'occ.append_audit_event'::regproc"
            )
        ).scalar_one()
        written = [
            session.execute(WRITER, {"action": f"namespaces.step{n}", "actor": actor}).scalar_one()
            for n in range(7)  # past PL/pgSQL's switch to a generic plan
        ]
        with pytest.raises(sa_exc.IntegrityError) as refused, session.begin_nested():
            session.execute(WRITER, {"action": "Not An Action", "actor": actor})
    assert language == "plpgsql"
    assert violated_constraint(refused.value) == "audit_events_action_format"
    with db.transaction() as session:
        events = audit.list_events(session)
    assert [event.id for event in reversed(events)] == written
    assert [event.action for event in reversed(events)] == [f"namespaces.step{n}" for n in range(7)]
    assert all(event.details == {} for event in events)
