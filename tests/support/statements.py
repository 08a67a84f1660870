"""The statements a piece of code runs: through SQLAlchemy's execution, and below it as hot
statements (``occ.state.hot_statements``), in the order they ran."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from occ.state import hot_statements
from occ.state.db import Database


@contextlib.contextmanager
def recorded(db: Database) -> Iterator[list[str]]:
    """The SQL of every statement run inside: SQLAlchemy's on ``db``'s engine, hot ones on
    any connection."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(str(args[2]))

    def hot(run: Callable[..., Any]) -> Callable[..., Any]:
        def recorded_hot(target: Any, statement: hot_statements.HotStatement, params: Any) -> Any:
            seen.append(statement.sql)
            return run(target, statement, params)

        return recorded_hot

    with pytest.MonkeyPatch.context() as patched:
        for name in ("first", "every", "run"):
            patched.setattr(hot_statements, name, hot(getattr(hot_statements, name)))
        sa.event.listen(db.engine, "before_cursor_execute", record)
        try:
            yield seen
        finally:
            sa.event.remove(db.engine, "before_cursor_execute", record)
