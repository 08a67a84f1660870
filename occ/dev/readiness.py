"""Whether the children of ``occ dev`` are ready: the API's ``/readyz``, the workers' markers and
the helpers' own checks (Flower's ``/healthcheck``).

A worker writes its readiness marker once its start-up checks passed; one that answers
``celery inspect ping`` but writes no marker is accepted after ``MARKER_GRACE_S``. Nothing here
starts or stops a process.
"""

from __future__ import annotations

import contextlib
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from occ.settings.config import Settings

logger = logging.getLogger("occ.dev")

MARKER_GRACE_S: Final = 10.0
"""A worker that answers ``ping`` but writes no readiness marker is accepted after this."""


def answers_ok(url: str) -> bool:
    """Whether ``GET url`` (a child's own loopback URL) answers 200 within 2 s."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback
            return int(response.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def api_ready(api_url: str) -> bool:
    """Whether ``GET {api_url}/readyz`` answers 200."""
    return answers_ok(f"{api_url}/readyz")


class CeleryPinger:
    """``celery inspect ping`` in-process, at most once a second: the node names that answer
    (the part before ``@``). The app comes from ``make_app`` on first use."""

    def __init__(self, make_app: Callable[[], Any]) -> None:
        self.make_app = make_app
        self.app: Any = None
        self.next_at = 0.0

    def answering(self) -> set[str]:
        now = time.monotonic()
        if now < self.next_at:
            return set()
        self.next_at = now + 1.0
        try:
            if self.app is None:
                self.app = self.make_app()
            replies = self.app.control.ping(timeout=0.5) or []
        except Exception as exc:
            logger.info("ping failed: %s", type(exc).__name__)
            return set()
        return {node.partition("@")[0] for reply in replies for node in reply}

    def close(self) -> None:
        if self.app is not None:
            with contextlib.suppress(Exception):
                self.app.close()


class Readiness:
    """Tracks which of the API, the workers (by name, with their markers) and the helpers (by
    name, with a check each, such as Flower's) are not ready."""

    def __init__(
        self,
        api_url: str,
        markers: Mapping[str, Path],
        pinger: CeleryPinger,
        helpers: Mapping[str, Callable[[], bool]] | None = None,
    ) -> None:
        self.api_url = api_url
        self.markers = dict(markers)
        self.pinger = pinger
        self.helpers = dict(helpers or {})
        self.waiting = {"api", *self.markers, *self.helpers}
        self._pinged: dict[str, float] = {}

    def check(self) -> set[str]:
        """One look at everything still waiting; returns what still is."""
        if "api" in self.waiting and api_ready(self.api_url):
            self.waiting.discard("api")
        for name, is_ready in self.helpers.items():
            if name in self.waiting and is_ready():
                self.waiting.discard(name)
        now = time.monotonic()
        for name, marker in self.markers.items():
            if name not in self.waiting:
                continue
            if marker.exists():
                self.waiting.discard(name)
            elif name in self._pinged and now - self._pinged[name] > MARKER_GRACE_S:
                logger.warning(
                    "%s answers ping but wrote no readiness marker; accepting the ping", name
                )
                self.waiting.discard(name)
        if any(name in self.waiting and name not in self._pinged for name in self.markers):
            for node in self.pinger.answering():
                self._pinged.setdefault(node, now)
        return set(self.waiting)


def celery_app(settings: Settings, cwd: Path) -> Any:
    """A Celery app on the children's broker, for ``ping`` (the readiness fallback)."""
    from occ.tasks import app as tasks_app  # noqa: PLC0415 - only for the fallback

    app = tasks_app.create(settings)
    if settings.broker_url.startswith("filesystem://"):
        options = dict(app.conf.broker_transport_options or {})
        folder = str(cwd / "data_in")
        options.update(
            data_folder_in=folder, data_folder_out=folder, control_folder=str(cwd / "control")
        )
        app.conf.broker_transport_options = options
    return app
