"""The fake apiserver's change history: what a watch replays, and what compaction forgets.

Models etcd's revision log as the watch cache serves it: every change to a stored object is
kept with the resourceVersion it was written at, in order, up to a limit; older changes are
compacted away, and a watch that asks to start before the oldest kept change is told its
version expired (410). Watchers wait on the history's condition for the next change. It must
not store objects or serve HTTP; the store records changes under its own lock.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass
from typing import Any, Final, Literal

Obj = dict[str, Any]
ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]

DEFAULT_LIMIT: Final = 200_000
"""Changes kept before the oldest are compacted (a real watch cache keeps a time window)."""


class Expired(Exception):
    """A watch or a continued list asked for a resourceVersion that was compacted away."""

    def __init__(self, asked: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {asked} ({oldest})")
        self.asked = asked
        self.oldest = oldest


@dataclass(frozen=True)
class Change:
    """One write as a watch reports it: the object after it (as deleted, for ``DELETED``) and
    before it (``None`` for ``ADDED``). Both are stored dicts: never changed in place."""

    version: int
    type: ChangeType
    plural: str
    namespace: str | None
    obj: Obj
    previous: Obj | None


class History:
    """Changes in version order behind the store's lock; ``compacted`` is the newest version
    no longer replayable (a watch may start from it or later)."""

    def __init__(self, lock: threading.RLock, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("the history keeps at least one change")
        self.limit = limit
        self.compacted = 0
        self._changed = threading.Condition(lock)
        self._changes: list[Change] = []
        self._versions: list[int] = []

    def record(self, change: Change) -> None:
        """Append ``change`` (the caller holds the lock) and wake the watchers."""
        self._changes.append(change)
        self._versions.append(change.version)
        if len(self._changes) > self.limit + self.limit // 4:  # trim in steps, not per write
            self.compact(self._versions[-self.limit - 1])
        self._changed.notify_all()

    def since(self, version: int) -> list[Change]:
        """Every change after ``version``; ``Expired`` when some were compacted away."""
        if version < self.compacted:
            raise Expired(version, self.compacted)
        start = bisect.bisect_right(self._versions, version)
        return self._changes[start:]

    def compact(self, version: int) -> None:
        """Forget every change up to ``version`` (the caller holds the lock)."""
        if version <= self.compacted:
            return
        cut = bisect.bisect_right(self._versions, version)
        del self._changes[:cut]
        del self._versions[:cut]
        self.compacted = version

    def wait(self, timeout_s: float) -> None:
        """Wait (holding the lock) until a change is recorded or ``timeout_s`` passed."""
        self._changed.wait(max(timeout_s, 0.0))

    def wake(self) -> None:
        """Wake every waiting watcher (the server stops, or watches are cut)."""
        with self._changed:
            self._changed.notify_all()
