"""DDL on the audit log beside a long reader of it (what ``occ audit export`` holds while it
streams) and an audit write from a third session: the write must not queue behind the DDL for
as long as the reader reads."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

import sqlalchemy as sa

from occ.state import audit
from occ.state.db import Database
from tests.support import locks, processes
from tests.support.held_elsewhere import held_elsewhere

DEADLINE_S: Final = 5.0
"""How long the DDL and the write are given: far past any lock wait the DDL may take, far
short of a reader that never ends."""
_RUNNING: Final = "still waiting"


@contextlib.contextmanager
def reading(db: Database) -> Iterator[None]:
    """Hold the audit log as a streaming export does: a REPEATABLE READ snapshot that read from
    it (ACCESS SHARE on ``occ.audit_events`` until the snapshot ends)."""
    with db.snapshot() as session:
        session.execute(sa.text("SELECT sequence FROM occ.audit_events LIMIT 1")).all()
        yield


def read_elsewhere(db: Database) -> contextlib.AbstractContextManager[None]:
    """``reading`` held on another thread for the duration of the block (and never for less
    than several ``DEADLINE_S``)."""
    return held_elsewhere(lambda: reading(db), timeout_s=6 * DEADLINE_S)


def append(db: Database) -> None:
    """One audit event in a transaction of its own, as every change writes its evidence."""
    with db.transaction() as session:
        audit.mutation(session, action="test.beside", actor_id="prn_test")


@dataclass(frozen=True)
class Beside:
    """What the DDL answered (its value or exception), how long it took, and whether the
    audit write started while it waited completed within ``DEADLINE_S``."""

    outcome: object
    elapsed_s: float
    written: bool


def ddl_beside_a_write(ddl: Callable[[], object], app: Database, owner: Database) -> Beside:
    """Run ``ddl`` on a thread; once it waits for a lock (or is done), append an audit event on
    ``app`` from another thread. Call it while something holds the audit log: a DDL that
    queues behind that holder holds the write up for as long (``written`` false)."""
    answered: list[tuple[object, float]] = []

    def run_ddl() -> None:
        started = time.monotonic()
        try:
            outcome: object = ddl()
        except Exception as exc:
            outcome = exc
        answered.append((outcome, time.monotonic() - started))

    runner = threading.Thread(target=run_ddl, daemon=True)
    runner.start()
    processes.wait_for(
        lambda: locks.waiters(owner) > 0 or not runner.is_alive(),
        timeout=DEADLINE_S,
        interval=0.01,
        message="the DDL waiting for its lock, or done",
    )
    written = threading.Event()

    def write() -> None:
        append(app)
        written.set()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(DEADLINE_S)
    runner.join(DEADLINE_S)
    outcome, elapsed_s = answered[0] if answered else (_RUNNING, DEADLINE_S)
    return Beside(outcome, elapsed_s, written.is_set())
