"""Migration 0018 on a populated database: the audit events of several months move into
their month partitions with their ids and sequence numbers, new events continue the sequence,
and the log stays append-only."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from occ.state import schema
from occ.state.db import Database
from tests.support import databases

_OLD_EVENTS = sa.text("""
    INSERT INTO occ.audit_events (id, occurred_at, kind, action, actor_id, outcome, details)
    SELECT 'aud_' || gen_random_uuid(),
           clock_timestamp() - interval '95 days' + n * interval '1 hour', 'mutation',
           'test.event', 'prn_test', 'success', jsonb_build_object('n', n)
      FROM generate_series(1, 2000) n
""")
_EVENTS = sa.text("SELECT id, sequence, occurred_at, details FROM occ.audit_events ORDER BY id")


def _value(session: orm.Session, sql: str, **params: object) -> Any:
    """The one value ``sql`` selects."""
    return session.execute(sa.text(sql), params).scalar_one()


def test_the_events_of_an_unpartitioned_log_move_into_month_partitions() -> None:
    urls = databases.create_test_database(f"occ_audit_{uuid.uuid4().hex[:8]}")
    owner = Database(urls.owner, pool_size=1)
    app = Database(urls.app, pool_size=1)
    try:
        schema.downgrade(urls.owner, "0017")
        with owner.transaction() as session:
            session.execute(_OLD_EVENTS)
            before = session.execute(_EVENTS).all()
        owner.dispose()

        schema.upgrade(urls.owner)

        with owner.transaction() as session:
            assert session.execute(_EVENTS).all() == before
            kind = _value(
                session, "SELECT relkind FROM pg_class WHERE oid = 'occ.audit_events'::regclass"
            )
            months = _value(
                session,
                "SELECT count(*) FROM pg_inherits WHERE inhparent = 'occ.audit_events'::regclass",
            )
            in_default = _value(session, "SELECT count(*) FROM occ.audit_events_default")
        assert kind == "p" and months >= 4 + 1 and in_default == 0  # every month, + default
        with app.transaction() as session:
            event_id = _value(
                session,
                "SELECT occ.append_audit_event('mutation', 'test.after', 'prn_test', NULL, "
                "NULL, NULL, NULL, 'success', '{}')",
            )
            new = _value(
                session, "SELECT sequence FROM occ.audit_events WHERE id = :id", id=event_id
            )
        assert new > max(row.sequence for row in before)
        with (
            pytest.raises(sa.exc.DBAPIError, match="immutable"),
            owner.transaction() as session,
        ):
            session.execute(sa.text("UPDATE occ.audit_events SET action = 'changed'"))
    finally:
        owner.dispose()
        app.dispose()
        databases.drop_database(urls)
