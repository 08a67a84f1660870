"""The nudge: after an admission commits, ask the fleet to claim now instead of at the next beat.

Fire and forget from a background thread, so a request never waits on the broker; bursts
coalesce: at most one ``occ.claim`` message per ``COALESCE_S`` per process (one claim takes a
whole batch, so a message per admission would only add claims that find nothing). A broker
failure is logged as ``api.nudge-failed`` and never reaches the caller: beat claims the work
anyway.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Final

from celery import Celery

from occ.tasks import names
from occ.telemetry import observability

COALESCE_S: Final = 0.02
"""The shortest time between two ``occ.claim`` messages of one process: nudges meanwhile wait
for the next (a pickup is delayed by at most this much)."""


class Nudger:
    """Sends ``occ.claim`` to the control queue, at most one in flight per process."""

    def __init__(self, celery: Celery, *, coalesce_s: float = COALESCE_S) -> None:
        self._celery = celery
        self._coalesce_s = coalesce_s
        self._wanted = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self.sent = 0
        self.failed = 0

    def nudge(self) -> None:
        """Ask for a claim soon; returns at once."""
        self._ensure_thread()
        self._wanted.set()

    def send_now(self) -> bool:
        """Publish one ``occ.claim`` in the caller's thread; False (and logged) on failure."""
        try:
            self._celery.send_task(
                names.CLAIM, queue=names.CONTROL_QUEUE, retry=False, ignore_result=True
            )
        except Exception as exc:
            self.failed += 1
            observability.log("api.nudge-failed", level=logging.WARNING, error=type(exc).__name__)
            return False
        self.sent += 1
        return True

    def _ensure_thread(self) -> None:
        # a forked worker (gunicorn) inherits no threads: start one per process
        if self._thread is not None and self._pid == os.getpid() and self._thread.is_alive():
            return
        with self._lock:
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                self._pid = os.getpid()
                self._wanted = threading.Event()
                self._thread = threading.Thread(target=self._run, name="occ-nudge", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            sent_at = time.monotonic()
            self.send_now()
            # nudges arriving until then set the event again and share the next message
            pause = self._coalesce_s - (time.monotonic() - sent_at)
            if pause > 0:
                time.sleep(pause)
