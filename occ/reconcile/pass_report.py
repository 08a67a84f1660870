"""What one pass measured and what ended it, for its ``worker.completed`` event.

The executor opens a ``recording()`` around each pass; the revision reconciler marks the time
it spends in the driver's prepare and activation (``phase``) and the driver's answer that
kept it from finishing (``driver_answer``: the driver's code and, for an HTTP API, the status
and the Kubernetes Status reason), and the startup warnings a deployment's success carries
(``startup_warnings``). Nothing here changes what a pass does; outside a recording
every call is a no-op.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, Literal

from occ.drivers.compute import base
from occ.foundation import codes

COMPUTE: Final = "compute"
"""The ``dependency`` of a cause the Compute Driver answered."""


@dataclass
class PassReport:
    """What one pass measured (seconds) and, when it did not finish, why."""

    prepare_s: float = 0.0
    activation_s: float = 0.0
    cause: str | None = None
    dependency: str | None = None
    status: int | None = None
    status_reason: str | None = None
    warnings: tuple[dict[str, str], ...] = ()

    def timing_fields(self) -> dict[str, Any]:
        """``prepareMs`` and ``activationMs`` of the pass."""
        return {
            "prepareMs": round(self.prepare_s * 1000, 1),
            "activationMs": round(self.activation_s * 1000, 1),
        }

    def cause_fields(self) -> dict[str, Any]:
        """``cause``, ``dependency``, ``status`` and ``statusReason``, those that are known."""
        fields = {
            "cause": self.cause,
            "dependency": self.dependency,
            "status": self.status,
            "statusReason": self.status_reason,
        }
        return {name: value for name, value in fields.items() if value is not None}


_CURRENT: ContextVar[PassReport | None] = ContextVar("occ_pass_report", default=None)


@contextlib.contextmanager
def recording() -> Iterator[PassReport]:
    """A fresh report for the pass run inside."""
    report = PassReport()
    token = _CURRENT.set(report)
    try:
        yield report
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def phase(name: Literal["prepare", "activation"]) -> Iterator[None]:
    """Add the time spent inside to the pass's ``name`` phase."""
    started = time.perf_counter()
    try:
        yield
    finally:
        report = _CURRENT.get()
        if report is not None:
            spent = time.perf_counter() - started
            if name == "prepare":
                report.prepare_s += spent
            else:
                report.activation_s += spent


def runtime_failure() -> str | None:
    """The runtime failure the current pass observed: the driver's code of what kept it from
    finishing, unless that is only occ's own "not ready yet" (a pending code of occ's)."""
    report = _CURRENT.get()
    if report is None or report.cause is None or report.dependency != COMPUTE:
        return None
    registered = codes.lookup(report.cause)
    if registered is not None and registered.outcome == codes.Outcome.PENDING:
        return None
    return report.cause


def startup_warnings(warnings: tuple[dict[str, str], ...]) -> None:
    """The startup warnings the pass's deployment publishes (its ``worker.completed`` shows
    them)."""
    report = _CURRENT.get()
    if report is not None:
        report.warnings = warnings


def driver_answer(code: str | None, error: base.DriverError | None = None) -> None:
    """The driver's answer that kept the pass from finishing: its code (and, from an error,
    the HTTP status and the Kubernetes Status reason it carries)."""
    report = _CURRENT.get()
    if report is None or code is None:
        return
    report.cause = code
    report.dependency = COMPUTE
    if error is not None:
        report.status = error.status
        report.status_reason = error.status_reason
