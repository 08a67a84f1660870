"""The controller work items a test reads back to assert on: whole rows, oldest first, read
as the given database's role in a transaction of their own."""

from __future__ import annotations

import sqlalchemy as sa

from occ.state import models
from occ.state.db import Database


def matching(db: Database, *conditions: sa.ColumnElement[bool]) -> list[models.ControllerWork]:
    """Every work item meeting all ``conditions`` (on ``models.ControllerWork`` columns), in
    the order they were created."""
    with db.transaction() as session:
        return list(
            session.scalars(
                sa.select(models.ControllerWork)
                .where(*conditions)
                .order_by(models.ControllerWork.created_at)
            )
        )
