"""The database defends itself: shape CHECKs, immutability, grants and the migration's health."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from occ.foundation import ids
from occ.state import schema, work_queue
from occ.state.db import Database, violated_constraint
from tests.support import databases, rows


@pytest.fixture
def owners(db: Database) -> dict[str, str]:
    with db.transaction() as session:
        actor = rows.principal(session)
        namespace_id = rows.namespace(session, created_by=actor, status="ready")
        agent_id = rows.agent(session, namespace_id=namespace_id)
        revision_id = rows.revision(
            session, namespace_id=namespace_id, agent_id=agent_id, actor_id=actor, number=1
        )
    return {"actor": actor, "ns": namespace_id, "agent": agent_id, "rev": revision_id}


def _insert_work(db: Database, **columns: object) -> None:
    values = {
        "available_at": sa.func.clock_timestamp(),
        "created_at": sa.func.clock_timestamp(),
        "updated_at": sa.func.clock_timestamp(),
        **columns,
    }
    table = sa.table("controller_work", *(sa.column(name) for name in values), schema="occ")
    with db.transaction() as session:
        session.execute(sa.insert(table).values(**values))


def _namespace_work(owners: dict[str, str], **overrides: object) -> dict[str, object]:
    return {
        "id": f"namespace:{owners['ns']}:reconcile:ready",
        "kind": "namespace_ready",
        "namespace_id": owners["ns"],
        "actor_id": owners["actor"],
        "namespace_target": "ready",
        **overrides,
    }


def test_a_well_formed_row_is_accepted(db: Database, owners: dict[str, str]) -> None:
    _insert_work(db, **_namespace_work(owners))


MALFORMED = {
    "namespace work with an agent target": {"agent_target": "stopped"},
    "kind that does not match the key": {"kind": "namespace_deleted"},
    "unknown kind": {"kind": "namespace_exploded"},
    "key that does not match the owner": {"id": "namespace:ns_other:reconcile:ready"},
    "namespace target outside the set": {
        "namespace_target": "gone",
        "id": "namespace:{ns}:reconcile:gone",
    },
    "claimed without a token": {"state": "claimed"},
    "queued with a token": {"claim_token": uuid.uuid4()},
    "terminal without a reason": {"state": "succeeded", "completed_at": sa.func.now()},
    "reason on a queued row": {"reason_code": "NAMESPACE_READY"},
    "result data on a queued row": {"result_data": sa.cast({"timeoutMs": 1}, sa.JSON)},
    "lower-case reason code": {
        "state": "failed_permanent",
        "completed_at": sa.func.now(),
        "reason_code": "lease_expired",
    },
    "result data for a code that allows none": {
        "state": "failed_permanent",
        "completed_at": sa.func.now(),
        "reason_code": "LEASE_EXPIRED",
        "result_data": sa.text("'{\"timeoutMs\": 5}'::jsonb"),
    },
    "deadline data with a stray key": {
        "state": "failed_permanent",
        "completed_at": sa.func.now(),
        "reason_code": "CONVERGENCE_DEADLINE_EXCEEDED",
        "result_data": sa.text('\'{"timeoutMs": 5, "cause": "x"}\'::jsonb'),
    },
    "deadline data with a fractional timeout": {
        "state": "failed_permanent",
        "completed_at": sa.func.now(),
        "reason_code": "CONVERGENCE_DEADLINE_EXCEEDED",
        "result_data": sa.text("'{\"timeoutMs\": 1.5}'::jsonb"),
    },
    "negative attempts": {"attempt_count": -1},
    "unknown state": {"state": "running"},
    "progress code without a time": {"last_progress_code": "LEASE_EXPIRED"},
    "actor that is not a principal id": {"actor_id": "root"},
}


@pytest.mark.parametrize("overrides", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_work_rows_are_rejected(
    db: Database, owners: dict[str, str], overrides: dict[str, object]
) -> None:
    columns = _namespace_work(owners, **overrides)
    if isinstance(columns["id"], str):
        columns["id"] = columns["id"].format(ns=owners["ns"])
    with pytest.raises(sa_exc.IntegrityError, match="check constraint"):
        _insert_work(db, **columns)


def test_revision_and_agent_shapes(db: Database, owners: dict[str, str]) -> None:
    revision = {
        "id": f"agent_revision:{owners['rev']}:reconcile",
        "kind": "revision_reconcile",
        "namespace_id": owners["ns"],
        "agent_id": owners["agent"],
        "revision_id": owners["rev"],
        "actor_id": owners["actor"],
    }
    _insert_work(db, **revision)
    with pytest.raises(sa_exc.IntegrityError, match="check constraint"):
        _insert_work(
            db,
            **{
                **revision,
                "id": f"agent_revision:{owners['rev']}:maintenance:x",
                "kind": "revision_maintenance",
            },
        )
    with pytest.raises(sa_exc.IntegrityError, match="check constraint"):
        _insert_work(db, **{**revision, "kind": "revision_maintenance"})
    with pytest.raises(sa_exc.IntegrityError, match="check constraint"):
        _insert_work(
            db,
            **{
                **revision,
                "id": "x",
                "kind": "agent_stopped",
                "revision_id": None,
                "agent_target": "stopped",
            },
        )
    _insert_work(
        db,
        id=f"agent:{owners['agent']}:reconcile:stopped:{uuid.uuid4()}",
        kind="agent_stopped",
        namespace_id=owners["ns"],
        agent_id=owners["agent"],
        actor_id=owners["actor"],
        agent_target="stopped",
    )


UPDATES = {
    "a key rewritten to another owner's": (
        "id = 'namespace:ns_other:reconcile:ready'",
        "controller_work_shape",
    ),
    "an actor that is not a principal id": ("actor_id = 'root'", "controller_work_owner_format"),
    "result data a success code allows none of": (
        "state = 'succeeded', completed_at = now(), reason_code = 'NAMESPACE_READY',"
        " result_data = '{\"timeoutMs\": 5}'::jsonb",
        "controller_work_result_data_state",
    ),
}


@pytest.mark.parametrize(("assignments", "constraint"), UPDATES.values(), ids=UPDATES.keys())
def test_updates_are_checked_like_inserts(
    owner_db: Database, db: Database, owners: dict[str, str], assignments: str, constraint: str
) -> None:
    """The frozen-column and result checks run from triggers: an UPDATE (here by the owner,
    who may set every column) is refused with the same check violation as an INSERT."""
    _insert_work(db, **_namespace_work(owners))
    with (
        pytest.raises(sa_exc.IntegrityError, match="check constraint") as refused,
        owner_db.transaction() as session,
    ):
        session.execute(sa.text(f"UPDATE occ.controller_work SET {assignments}"))
    assert isinstance(refused.value, sa_exc.IntegrityError)
    assert violated_constraint(refused.value) == constraint


@pytest.mark.parametrize("name", ["", " padded", "padded ", "tab\there", "x" * 201, "nul\x01"])
def test_names_are_checked_by_the_database(db: Database, owners: dict[str, str], name: str) -> None:
    with pytest.raises(sa_exc.IntegrityError, match="check constraint"), db.transaction() as s:
        s.execute(
            sa.text(
                "INSERT INTO occ.namespaces (id, name, created_by) VALUES (:id, :name, :actor)"
            ),
            {"id": ids.new("namespace"), "name": name, "actor": owners["actor"]},
        )


def test_ids_are_checked_by_the_database(db: Database, owners: dict[str, str]) -> None:
    with pytest.raises(sa_exc.IntegrityError, match="check constraint"), db.transaction() as s:
        s.execute(
            sa.text(
                "INSERT INTO occ.namespaces (id, name, created_by) "
                "VALUES ('ns_not-a-uuid', 'n', :actor)"
            ),
            {"actor": owners["actor"]},
        )


@pytest.mark.parametrize(
    "table",
    [
        "agents",
        "agent_revisions",
        "principals",
        "api_keys",
        "access_bindings",
        "controller_work",
        "audit_events",
        "roles",
        "namespaces",
        "installation",
    ],
)
def test_occ_app_cannot_delete_protected_rows(
    db: Database, owners: dict[str, str], table: str
) -> None:
    with (
        pytest.raises(sa_exc.ProgrammingError, match="permission denied"),
        db.transaction() as session,
    ):
        session.execute(sa.text(f"DELETE FROM occ.{table}"))


def test_occ_app_cannot_rewrite_a_work_rows_owner(db: Database, owners: dict[str, str]) -> None:
    _insert_work(db, **_namespace_work(owners))
    with (
        pytest.raises(sa_exc.ProgrammingError, match="permission denied"),
        db.transaction() as session,
    ):
        session.execute(
            sa.text("UPDATE occ.controller_work SET actor_id = :actor"),
            {"actor": ids.new("principal")},
        )


def test_revisions_and_audit_events_are_immutable_even_for_the_owner(
    owner_db: Database,
    db: Database,
    owners: dict[str, str],
) -> None:
    with db.transaction() as session:
        work_queue.enqueue(session, *rows.namespace_work(owners["ns"], owners["actor"]))
    for statement in (
        "UPDATE occ.agent_revisions SET revision_number = 7",
        "UPDATE occ.audit_events SET outcome = 'denied'",
        "DELETE FROM occ.audit_events",
    ):
        with pytest.raises(sa_exc.DBAPIError, match="immutable"), owner_db.transaction() as session:
            session.execute(
                sa.text(
                    "INSERT INTO occ.audit_events (id, kind, action, actor_id, "
                    "outcome) VALUES (:id, 'mutation', 'test', :actor, "
                    "'success')"
                ),
                {"id": ids.new("audit_event"), "actor": owners["actor"]},
            )
            session.execute(sa.text(statement))


def test_the_finalizer_runs_with_a_fixed_search_path(owner_db: Database) -> None:
    with owner_db.transaction() as session:
        settings = session.execute(
            sa.text(
                "SELECT p.proname, p.prosecdef, p.proconfig FROM pg_proc p "
                "JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = 'occ' AND p.prosecdef"
            )
        ).all()
    assert {row.proname for row in settings} == {
        "finalize_agent_deletion",
        "retry_failed_deletion",
        "prune_work",
        "ensure_audit_partitions",
        "tally_hidden_denial",
    }
    for row in settings:
        assert row.proconfig == ["search_path=pg_catalog, pg_temp"]


def test_the_models_match_the_migrations(database_urls: databases.DatabaseUrls) -> None:
    schema.check(database_urls.owner)  # raises when autogenerate would change anything


def test_migrations_run_down_and_up_again() -> None:
    urls = databases.create_test_database(f"occ_migration_{uuid.uuid4().hex[:8]}")
    try:
        schema.downgrade(urls.owner, "base")
        schema.upgrade(urls.owner)
        schema.check(urls.owner)
    finally:
        databases.drop_database(urls)


def test_the_finalizer_fences_with_the_one_claim_check(owner_db: Database) -> None:
    """The Agent-deletion finalizer asks ``occ.claim_is_live`` both times it checks its claim,
    like every fenced statement of the queue's files (tests/unit/state/test_queries.py)."""
    with owner_db.transaction() as session:
        definition = session.execute(
            sa.text(
                "SELECT pg_get_functiondef('occ.finalize_agent_deletion(text, uuid)'::regprocedure)"
            )
        ).scalar_one()
    assert definition.count("occ.claim_is_live(w, p_claim_token)") == 2
    assert "claim_token = p_claim_token" not in definition
