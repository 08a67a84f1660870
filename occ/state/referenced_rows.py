"""Named Namespace rows that Agents reference (Configurations, Secrets): the parts they share.

An insert of a new name, a write in a savepoint whose constraint violations become occ errors,
a delete, the Agents that reference a row, and the key-share lock that keeps a referenced row
from being deleted before the Agent that references it is written. Takes the caller's session
and never commits; knows nothing of what the rows hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from occ.foundation import errors
from occ.state import db, models, rows

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_AGENTS: Final = cast(sa.Table, models.Agent.__table__)
_REFERENCE_LIMIT: Final = 10
_Result = TypeVar("_Result")
D = TypeVar("D", bound="DataclassInstance")


@dataclass(frozen=True, kw_only=True)
class ReferencedRows(Generic[D]):
    """One kind of row Agents reference, and the constraints that guard it."""

    noun: str
    """What the API calls the row (``Configuration``), for error messages."""
    values: rows.Values[D]
    """Its table, and the value its rows are read into."""
    name_key: str
    """The unique constraint on (namespace_id, name)."""
    name_valid: str
    """The check constraint on the name."""
    agent_column: str
    """The column of ``agents`` that references the row."""
    agent_fkey: str
    """The foreign key of that column."""

    @property
    def table(self) -> sa.Table:
        """The table of the rows."""
        return self.values.table

    def insert(self, session: orm.Session, **columns: Any) -> D:
        """The row of ``columns``, inserted.

        Raises:
            Conflict: the Namespace already holds a row with this name.
            InvalidInput: the database refused the name.
        """
        statement = self.values.insert(**columns).on_conflict_do_nothing(constraint=self.name_key)
        row = self.written(session, statement)
        if row is None:
            raise self._name_taken()
        return row

    def written(self, session: orm.Session, statement: sa.Insert | sa.Update) -> D | None:
        """Run the INSERT or UPDATE in a savepoint (see ``guarded_write``): the row it wrote, or
        ``None``."""
        return self.guarded_write(session, lambda: self.values.returned(session, statement))

    def guarded_write(self, session: orm.Session, write: Callable[[], _Result]) -> _Result:
        """Run ``write`` in a savepoint and turn constraint violations into occ errors.

        The original exception is dropped (``from None``): its parameters may hold what the
        row keeps (a Secret's ciphertext).
        """
        try:
            with session.begin_nested():
                return write()
        except sa_exc.IntegrityError as exc:
            constraint = db.violated_constraint(exc)
            if constraint == self.name_key:
                raise self._name_taken() from None
            if constraint == self.name_valid:
                raise errors.InvalidInput.at(("name",), "is not a valid name") from None
            if constraint == self.agent_fkey:
                raise errors.Conflict(f"an Agent references this {self.noun}") from None
            raise

    def delete(self, session: orm.Session, namespace_id: str, row_id: str) -> bool:
        """Remove the Namespace's row; whether it existed.

        Raises:
            Conflict: an Agent still references it.
        """
        statement = (
            sa.delete(self.table)
            .where(self.table.c.id == row_id, self.table.c.namespace_id == namespace_id)
            .returning(self.table.c.id)
        )
        return self.guarded_write(session, lambda: session.execute(statement).first()) is not None

    def referencing_agents(self, session: orm.Session, namespace_id: str, row_id: str) -> list[str]:
        """Ids of (up to ten) Agents of the Namespace that reference the row."""
        query = (
            sa.select(_AGENTS.c.id)
            .where(_AGENTS.c.namespace_id == namespace_id, _AGENTS.c[self.agent_column] == row_id)
            .order_by(_AGENTS.c.id)
            .limit(_REFERENCE_LIMIT)
        )
        return list(session.execute(query).scalars())

    def hold_reference(self, session: orm.Session, namespace_id: str, row_id: str) -> bool:
        """Whether the row is in the Namespace; holds a key-share lock until commit so that it
        cannot be deleted before the Agent that references it is written."""
        return (
            session.execute(
                sa.select(self.table.c.id)
                .where(self.table.c.namespace_id == namespace_id, self.table.c.id == row_id)
                .with_for_update(key_share=True, read=True)
            ).first()
            is not None
        )

    def _name_taken(self) -> errors.Conflict:
        return errors.Conflict(f"a {self.noun} with this name already exists in the Namespace")
