"""A ``ClaimGuard`` in memory for unit tests of the reconcilers: counts renewals, loses on cue.

``FakeClaimGuard`` stands where ``ClaimContext`` stands in a real pass. It can be told to lose
the claim at its Nth renewal (``renew_now`` then raises ``ClaimLost``, as the database fence
would) or at any moment (``lose``, as the background watch would). It touches no database and
starts no thread.
"""

from __future__ import annotations

import threading
import uuid

from occ.drivers.compute import base
from occ.foundation import errors


class FakeClaimGuard:
    """Renewals in memory; ``lose_at_renewal`` (1-based) is the renewal that finds it gone."""

    def __init__(
        self,
        work_id: str = "agent_revision:fake:reconcile",
        *,
        lose_at_renewal: int | None = None,
        journal: list[tuple[str, str]] | None = None,
    ) -> None:
        if lose_at_renewal is not None and lose_at_renewal < 1:
            raise ValueError("renewals are counted from 1")
        self.work_id = work_id
        self.token = uuid.uuid4()
        self.abort = threading.Event()
        self.renewals = 0
        """Renewals that confirmed the claim."""
        self.progress_codes: list[str] = []
        self._lose_at = lose_at_renewal
        self._journal = journal

    @property
    def lost(self) -> bool:
        return self.abort.is_set()

    def renew_now(self, progress_code: str | None = None) -> None:
        """Confirm the claim, or raise ``ClaimLost`` once it is gone (or this renewal loses it)."""
        if self._journal is not None:
            self._journal.append(("renew", self.work_id))
        if self.abort.is_set():
            raise errors.ClaimLost(self.work_id, "the pass was aborted")
        if self._lose_at is not None and self.renewals + 1 >= self._lose_at:
            self.lose()
            raise errors.ClaimLost(self.work_id, "another worker holds the item")
        self.renewals += 1
        if progress_code is not None:
            self.progress_codes.append(progress_code)

    def operation(self) -> base.Operation:
        return base.Operation(work_id=self.work_id, claim_token=str(self.token), abort=self.abort)

    def lose(self) -> None:
        """The claim is gone from now on (the abort event drivers watch is set)."""
        self.abort.set()

    def fence(self) -> None:
        """What a fenced store transaction checks first: ``ClaimLost`` once the claim is gone."""
        if self.abort.is_set():
            raise errors.ClaimLost(self.work_id)
