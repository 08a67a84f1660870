"""The bounded lock wait of the audit log's DDL on PostgreSQL: it lasts as long as its
transaction, and a lock not granted within it is ``AuditLogBusy``."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from occ.foundation import errors
from occ.state import audit_partitions
from occ.state.db import Database
from tests.support import audit_log, databases

_SETTING = sa.text("SELECT pg_backend_pid(), current_setting('lock_timeout')")


def test_the_bound_ends_with_its_transaction(database_urls: databases.DatabaseUrls) -> None:
    one = Database(database_urls.app, pool_size=1)  # the next transaction runs on it again
    try:
        with one.transaction() as session, audit_partitions.lock_wait_bounded(session):
            pid, inside = session.execute(_SETTING).one()
        with one.transaction() as session:
            same_pid, after = session.execute(_SETTING).one()
    finally:
        one.dispose()

    assert same_pid == pid
    assert (inside, after) == (f"{audit_partitions.LOCK_WAIT_MS}ms", "0")


@pytest.mark.usefixtures("db")  # an empty database
def test_a_lock_not_granted_within_the_bound_is_busy(owner_db: Database) -> None:
    with (
        audit_log.read_elsewhere(owner_db),
        pytest.raises(errors.AuditLogBusy),
        owner_db.transaction() as session,
        audit_partitions.lock_wait_bounded(session),
    ):
        session.execute(sa.text("LOCK TABLE occ.audit_events IN ACCESS EXCLUSIVE MODE"))
