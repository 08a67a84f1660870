"""The Celery app, built from ``Settings`` (never from Flask), with occ's queues and beat.

The broker carries only nudges and dispatches; PostgreSQL is the source of truth, so the
settings favour losing a message over running one twice: early ack, no prefetch, no result
backend, a visibility timeout far above the hard time limit, and workers that wait out a broker
outage of any length (with ``occ.tasks.broker_guard`` installed). ``Settings`` never goes into
the Celery configuration. ``celery -A occ.tasks.app`` finds ``app`` here (built lazily from the
environment on first use).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from celery import Celery

from occ.settings.config import Settings
from occ.tasks import broker_guard, lifecycle, logs, names, work, worker_process

CONTROL_QUEUE: Final = names.CONTROL_QUEUE
DRIVER_QUEUE: Final = names.DRIVER_QUEUE
CLAIM: Final = names.CLAIM
RECOVER_STALE: Final = names.RECOVER_STALE
RUN_WORK: Final = names.RUN_WORK

RUN_WORK_SOFT_LIMIT_S: Final = 600
RUN_WORK_HARD_LIMIT_S: Final = 660
CONTROL_SOFT_LIMIT_S: Final = 30
CONTROL_HARD_LIMIT_S: Final = 45
VISIBILITY_TIMEOUT_S: Final = 4 * RUN_WORK_HARD_LIMIT_S
PUBLISH_TIMEOUT_S: Final = 1.0


def create(settings: Settings) -> Celery:
    """A configured Celery app for ``settings``, with occ's tasks."""
    broker_guard.install()
    app = Celery("occ", set_as_current=False, amqp=broker_guard.AMQP)
    app.conf.update(_configuration(settings))
    # the settings hold credentials: they stay off ``app.conf``, which ``celery inspect conf``
    # and Flower show
    worker_process.keep_settings(app, settings)
    work.register(app)
    return app


def _configuration(settings: Settings) -> dict[str, Any]:
    claim_every = dt.timedelta(milliseconds=settings.claim_interval_ms)
    recover_every = dt.timedelta(milliseconds=settings.recovery_interval_ms)
    observe_every = dt.timedelta(milliseconds=settings.observer_tick_period_ms)
    prune_every = dt.timedelta(milliseconds=settings.prune_interval_ms)
    return {
        "broker_url": settings.broker_url,
        "broker_connection_retry_on_startup": True,
        # a worker waits out a broker outage of any length (Celery's default gives up after 100)
        "broker_connection_max_retries": None,
        "broker_channel_error_retry": True,
        "broker_connection_timeout": PUBLISH_TIMEOUT_S,
        "broker_transport_options": {
            "visibility_timeout": VISIBILITY_TIMEOUT_S,
            "socket_connect_timeout": PUBLISH_TIMEOUT_S,
            "socket_timeout": 5.0,
            "max_retries": 0,
        },
        "task_serializer": "json",
        "accept_content": ["json"],
        "result_backend": None,
        "task_ignore_result": True,
        "task_acks_late": False,
        "task_reject_on_worker_lost": False,
        "worker_prefetch_multiplier": 1,
        "worker_disable_prefetch": True,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        # occ.tasks.logs configures logging (Celery's setup_logging signal): never Celery
        "worker_hijack_root_logger": False,
        "worker_redirect_stdouts": False,
        "task_default_queue": CONTROL_QUEUE,
        "task_create_missing_queues": True,
        "task_routes": {
            CLAIM: {"queue": CONTROL_QUEUE},
            RECOVER_STALE: {"queue": CONTROL_QUEUE},
            names.OBSERVE_RUNTIMES: {"queue": CONTROL_QUEUE},
            names.PRUNE: {"queue": CONTROL_QUEUE},
            RUN_WORK: {"queue": DRIVER_QUEUE},
        },
        "task_annotations": {
            RUN_WORK: {
                "soft_time_limit": RUN_WORK_SOFT_LIMIT_S,
                "time_limit": RUN_WORK_HARD_LIMIT_S,
            },
            CLAIM: {"soft_time_limit": CONTROL_SOFT_LIMIT_S, "time_limit": CONTROL_HARD_LIMIT_S},
            RECOVER_STALE: {
                "soft_time_limit": CONTROL_SOFT_LIMIT_S,
                "time_limit": CONTROL_HARD_LIMIT_S,
            },
            names.OBSERVE_RUNTIMES: {
                "soft_time_limit": CONTROL_SOFT_LIMIT_S,
                "time_limit": CONTROL_HARD_LIMIT_S,
            },
            names.PRUNE: {
                "soft_time_limit": CONTROL_SOFT_LIMIT_S,
                "time_limit": CONTROL_HARD_LIMIT_S,
            },
        },
        "beat_schedule": {
            CLAIM: {
                "task": CLAIM,
                "schedule": claim_every,
                "options": {"queue": CONTROL_QUEUE, "expiration": claim_every.total_seconds()},
            },
            RECOVER_STALE: {
                "task": RECOVER_STALE,
                "schedule": recover_every,
                "options": {"queue": CONTROL_QUEUE, "expiration": recover_every.total_seconds()},
            },
            names.OBSERVE_RUNTIMES: {
                "task": names.OBSERVE_RUNTIMES,
                "schedule": observe_every,
                "options": {"queue": CONTROL_QUEUE, "expiration": observe_every.total_seconds()},
            },
            names.PRUNE: {
                "task": names.PRUNE,
                "schedule": prune_every,
                "options": {"queue": CONTROL_QUEUE, "expiration": prune_every.total_seconds()},
            },
        },
    }


_lazy: dict[str, Celery] = {}


def __getattr__(name: str) -> Celery:
    # ``celery -A occ.tasks.app`` reads ``app``; build it from the environment on first use
    if name == "app":
        if "app" not in _lazy:
            settings = lifecycle.settings_from_env()
            _lazy["app"] = create(settings)
            logs.install(_lazy["app"], settings)
            lifecycle.connect_signals(_lazy["app"])
        return _lazy["app"]
    raise AttributeError(name)
