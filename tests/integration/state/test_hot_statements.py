"""Hot statements on a session's psycopg connection (same transaction, same errors) and on an
autocommit connection (one statement, one commit)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from occ.foundation import errors
from occ.state import db as occ_db
from occ.state import hot_statements
from occ.state.db import AutocommitConnection, Database
from tests.support import databases

_SQL = {
    "create": sa.text(
        "CREATE TEMP TABLE hot_probe (id text PRIMARY KEY,"
        " n integer NOT NULL CONSTRAINT hot_probe_n_positive CHECK (n > 0)) ON COMMIT DROP"
    ),
    "insert": sa.text(
        "INSERT INTO hot_probe (id, n) VALUES (:id, :n) ON CONFLICT (id) DO NOTHING"
        " RETURNING id, n, '100%' AS literal"
    ),
}
HOT = hot_statements.compile_all(_SQL, "insert")


def test_parameters_take_the_drivers_style_and_literal_percent_signs_are_escaped() -> None:
    sql = HOT["insert"].sql
    assert "%(id)s" in sql and "%(n)s" in sql and ":id" not in sql
    assert "'100%%'" in sql


def test_a_hot_statement_runs_in_the_sessions_transaction(db: Database) -> None:
    with db.transaction() as session:
        session.execute(_SQL["create"])
        row = hot_statements.first(session, HOT["insert"], {"id": "a", "n": 1})
        assert row == {"id": "a", "n": 1, "literal": "100%"}
        assert hot_statements.first(session, HOT["insert"], {"id": "a", "n": 2}) is None
        seen = session.execute(sa.text("SELECT n FROM hot_probe WHERE id = 'a'")).scalar_one()
        assert seen == 1
        session.rollback()
        # the rollback took the table and its row with it
        missing = session.execute(
            sa.text("SELECT to_regclass('pg_temp.hot_probe') IS NULL")
        ).scalar_one()
        assert missing is True


def test_a_constraint_violation_is_sqlalchemys_integrity_error_with_its_parameters_hidden(
    db: Database,
) -> None:
    with pytest.raises(sa_exc.IntegrityError) as raised, db.transaction() as session:
        session.execute(_SQL["create"])
        hot_statements.first(session, HOT["insert"], {"id": "a", "n": 0})
    assert occ_db.violated_constraint(raised.value) == "hot_probe_n_positive"
    assert "[SQL: INSERT INTO hot_probe" in str(raised.value)
    assert "parameters" not in str(raised.value)


def _insert_after_losing_the_backend(
    owner_db: Database, pid: int, connection: hot_statements.Target
) -> None:
    """Terminate the backend ``pid`` (as the owner), then insert a probe row on ``connection``,
    which must find its connection invalidated."""
    with owner_db.transaction() as admin:
        admin.execute(sa.text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid})
    try:
        hot_statements.first(connection, HOT["insert"], {"id": "a", "n": 1})
    except sa_exc.OperationalError as exc:
        assert exc.connection_invalidated
        raise


def test_a_lost_connection_is_invalidated_and_reported_as_unavailable(
    db: Database, owner_db: Database
) -> None:
    with pytest.raises(errors.DependencyUnavailable), db.transaction() as session:
        session.execute(_SQL["create"])
        pid = session.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        _insert_after_losing_the_backend(owner_db, pid, session)
    # the pool never hands the dead connection out again
    db.ping()


# -- on an autocommit connection (no session) ---------------------------------------------------

_CREATE_PROBE = (
    "CREATE TEMP TABLE hot_probe (id text PRIMARY KEY,"
    " n integer NOT NULL CONSTRAINT hot_probe_n_positive CHECK (n > 0))"
)
"""The probe table for the life of the connection (a statement's commit would drop it)."""


@pytest.fixture
def probed(db: Database) -> Iterator[AutocommitConnection]:
    """An autocommit connection holding the probe table."""
    with db.autocommit_connection() as connection:
        databases.psycopg_of(connection).execute(_CREATE_PROBE)
        yield connection


def test_on_an_autocommit_connection_each_statement_commits_by_itself(
    probed: AutocommitConnection,
) -> None:
    assert hot_statements.first(probed, HOT["insert"], {"id": "a", "n": 1}) is not None
    with pytest.raises(sa_exc.IntegrityError):
        hot_statements.first(probed, HOT["insert"], {"id": "b", "n": 0})
    # no transaction was open to fail: the first row stands and the connection goes on
    assert hot_statements.first(probed, HOT["insert"], {"id": "c", "n": 3}) is not None
    rows = databases.psycopg_of(probed).execute("SELECT id FROM hot_probe ORDER BY id").fetchall()
    assert rows == [("a",), ("c",)]


def test_a_lost_autocommit_connection_is_invalidated_and_reported_as_unavailable(
    db: Database, owner_db: Database
) -> None:
    with pytest.raises(errors.DependencyUnavailable), db.autocommit_connection() as connection:
        pid = databases.psycopg_of(connection).info.backend_pid
        _insert_after_losing_the_backend(owner_db, pid, connection)
    assert not connection.connection.is_valid
    db.ping()


def test_every_row_and_a_statement_without_rows(probed: AutocommitConnection) -> None:
    listing = hot_statements.compile_all(
        {
            "bump": sa.text("UPDATE hot_probe SET n = n + 1 WHERE n >= :least"),
            "all": sa.text("SELECT id, n FROM hot_probe ORDER BY id"),
        },
        "bump",
        "all",
    )
    for row_id, n in (("b", 2), ("a", 1), ("c", 3)):
        hot_statements.first(probed, HOT["insert"], {"id": row_id, "n": n})

    assert hot_statements.run(probed, listing["bump"], {"least": 2}) == 2
    assert hot_statements.every(probed, listing["all"], {}) == [
        {"id": "a", "n": 1},
        {"id": "b", "n": 3},
        {"id": "c", "n": 4},
    ]
