"""A plain Celery app with occ's Celery settings and one no-op task: the baseline of e2e_bench.

Built from ``occ.tasks.app._configuration(settings)`` (same broker, serializer, ack, prefetch,
time-limit and transport settings as occ's workers) plus one task, ``bench.noop``, routed to
its own queue. There is no result backend, so the task counts its completions itself: each run
INCRs ``COUNTER`` on the broker's Redis database. ``celery -A bench.noop_app worker`` finds
``app`` here (built lazily from the ``OCC_*`` environment, like ``occ.tasks.app``); a worker
writes ``OCC_WORKER_READINESS_PATH`` once it is ready, as occ's workers do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

import redis
from celery import Celery, signals

from occ.settings.config import Settings
from occ.tasks import app as occ_app

NOOP: Final = "bench.noop"
QUEUE: Final = "bench.noop"
COUNTER: Final = "bench:noop:completed"

_lazy: dict[str, Any] = {}


def create(settings: Settings) -> Celery:
    """A Celery app with occ's settings whose only task is ``bench.noop``."""
    app = Celery("bench-noop", set_as_current=False)
    configuration = occ_app._configuration(settings)
    configuration["task_routes"] = {NOOP: {"queue": QUEUE}}
    configuration["task_default_queue"] = QUEUE
    configuration["task_annotations"] = {
        NOOP: {
            "soft_time_limit": occ_app.RUN_WORK_SOFT_LIMIT_S,
            "time_limit": occ_app.RUN_WORK_HARD_LIMIT_S,
        },
    }
    configuration["beat_schedule"] = {}
    app.conf.update(configuration)
    broker_url = settings.broker_url

    def noop() -> None:
        _counter_client(broker_url).incr(COUNTER)

    app.task(name=NOOP, ignore_result=True)(noop)  # a call, not a decorator: celery is untyped
    return app


def _counter_client(url: str) -> redis.Redis:
    # one client per (forked) process
    if _lazy.get("pid") != os.getpid():
        _lazy.update(pid=os.getpid(), client=redis.Redis.from_url(url))
    client: redis.Redis = _lazy["client"]
    return client


def _ready(**_: Any) -> None:
    path = Settings.from_env().worker_readiness_path
    if path:
        Path(path).write_text(str(os.getpid()), encoding="utf-8")


signals.worker_ready.connect(_ready, weak=False)


def __getattr__(name: str) -> Celery:
    if name == "app":
        if "app" not in _lazy:
            _lazy["app"] = create(Settings.from_env())
        app: Celery = _lazy["app"]
        return app
    raise AttributeError(name)
