"""Something held by another thread while a test checks what waits for it (a lock, a row)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager


@contextmanager
def held_elsewhere(
    hold: Callable[[], AbstractContextManager[object]], timeout_s: float = 10.0
) -> Iterator[None]:
    """Enter ``hold()`` on another thread for the duration of the block: the block starts once it
    is held, and the thread leaves it when the block ends (or after ``timeout_s`` at the most)."""
    entered = threading.Event()
    release = threading.Event()

    def keep() -> None:
        with hold():
            entered.set()
            release.wait(timeout_s)

    holder = threading.Thread(target=keep)
    holder.start()
    try:
        assert entered.wait(timeout_s), "the other thread never held it"
        yield
    finally:
        release.set()
        holder.join(timeout_s)
