"""What the queue tests of the state layer stand on: an actor, a provisioning Namespace of
theirs, and the queue seen as occ_app."""

from __future__ import annotations

import pytest

from occ.state import values
from occ.state.db import Database
from tests.support import rows
from tests.support.queue_steps import Queue


@pytest.fixture
def actor(db: Database) -> str:
    with db.transaction() as session:
        return rows.principal(session)


@pytest.fixture
def namespace_id(db: Database, actor: str) -> str:
    with db.transaction() as session:
        return rows.namespace(session, created_by=actor)


@pytest.fixture
def queue(db: Database, owner_db: Database, policy: values.QueuePolicy) -> Queue:
    return Queue(db, owner_db, policy)
