"""How a failed Kubernetes request becomes a driver error, and how it is logged.

An HTTP status (with the Status ``reason`` of the body and its headers) is translated into
``TransientDriverError`` (retry: 409, 429 with its ``Retry-After``, 410 ``Expired``, 5xx,
no answer, a terminating namespace) or ``PermanentDriverError`` (401/403, 404, 400/422).
Only the status, a bounded ``reason`` and the error's class are logged or raised: never a
body, which may hold a credential. It imports no client: ``client`` hands it plain values.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

from occ.drivers.compute import base
from occ.telemetry import observability

MAX_REASON: Final = 64
"""Characters kept of a Kubernetes Status ``reason`` (it is a CamelCase word)."""

UNAVAILABLE: Final = "KUBERNETES_API_UNAVAILABLE"
THROTTLED: Final = "KUBERNETES_THROTTLED"
CONFLICT: Final = "KUBERNETES_CONFLICT"
EXPIRED: Final = "KUBERNETES_RESOURCE_EXPIRED"
FORBIDDEN: Final = "KUBERNETES_FORBIDDEN"
INVALID: Final = "KUBERNETES_REQUEST_INVALID"
MISSING: Final = "KUBERNETES_OBJECT_MISSING"
TERMINATING: Final = "KUBERNETES_NAMESPACE_TERMINATING"
RESPONSE_INVALID: Final = "KUBERNETES_RESPONSE_INVALID"


class Throttled(base.TransientDriverError):
    """HTTP 429: ``retry_after_s`` is the server's ``Retry-After`` (``None`` without one)."""

    def __init__(self, reason: str, retry_after_s: float | None) -> None:
        super().__init__(THROTTLED, reason)
        self.retry_after_s = retry_after_s


class Expired(base.TransientDriverError):
    """HTTP 410: the resourceVersion (or continue token) asked for is no longer kept; list
    again from now."""

    def __init__(self, reason: str) -> None:
        super().__init__(EXPIRED, reason)


def status_reason(body: object) -> str:
    """The Kubernetes Status ``reason`` of a failed call's body, bounded (``""`` when absent)."""
    document = _document(body)
    reason = document.get("reason")
    if not isinstance(reason, str):
        return ""
    return "".join(c for c in reason if c.isalnum())[:MAX_REASON]


def _document(body: object) -> dict[str, object]:
    try:
        document = json.loads(body if isinstance(body, str | bytes) else "{}")
    except (TypeError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def _terminating(body: object) -> bool:
    """Whether a 403 is "the namespace is being terminated" (a wait, not a refusal)."""
    document = _document(body)
    details = document.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    if isinstance(causes, list) and any(
        isinstance(c, dict) and c.get("reason") == "NamespaceTerminating" for c in causes
    ):
        return True
    return "being terminated" in str(document.get("message", ""))


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


def answered(operation: str, exc: Any) -> base.DriverError:
    """The driver error of ``operation`` refused with the client's exception ``exc`` (its
    ``status``, ``body`` and ``headers``), logged here."""
    status = exc.status if isinstance(exc.status, int) else 0
    headers = exc.headers if isinstance(exc.headers, Mapping) else None
    return translated(operation, status, exc.body, headers, error_class=type(exc).__name__)


def translated(
    operation: str,
    status: int,
    body: object,
    headers: Mapping[str, str] | None,
    *,
    error_class: str = "ApiException",
) -> base.DriverError:
    """The driver error of ``operation`` answered ``status`` (logged with ``error_class``)."""
    reason = status_reason(body)
    described = f"{operation}: HTTP {status}" + (f" {reason}" if reason else "")
    error: base.DriverError
    if status == 429:
        error = Throttled(described, _retry_after(headers))
    elif status == 409:
        error = base.TransientDriverError(CONFLICT, described)
    elif status == 410:
        error = Expired(described)
    elif status == 403 and _terminating(body):
        error = base.TransientDriverError(TERMINATING, described)
    elif status in (401, 403):
        error = base.PermanentDriverError(FORBIDDEN, described)
    elif status == 404:
        error = base.PermanentDriverError(MISSING, described)
    elif status in (400, 422):
        error = base.PermanentDriverError(INVALID, described)
    elif status == 0 or status >= 500:
        error = base.TransientDriverError(UNAVAILABLE, described)
    else:
        error = base.PermanentDriverError(INVALID, described)
    error.status = status or None
    error.status_reason = reason or None
    log(operation, status, reason, error.code, error_class)
    return error


def unanswered(operation: str, error: BaseException) -> base.TransientDriverError:
    """The driver error of ``operation`` that got no answer (refused, reset, timed out)."""
    log(operation, None, None, UNAVAILABLE, type(error).__name__)
    return base.TransientDriverError(
        UNAVAILABLE, f"{operation}: the API server did not answer ({type(error).__name__})"
    )


def not_understood(operation: str) -> base.TransientDriverError:
    """The driver error of ``operation`` whose answer was not what the API describes."""
    log(operation, None, None, RESPONSE_INVALID, "ValidationError")
    return base.TransientDriverError(
        RESPONSE_INVALID, f"{operation}: the API server's answer was not understood"
    )


def log(operation: str, status: int | None, reason: str | None, code: str, error: str) -> None:
    """``compute.kubernetes-request-failed``: the operation, status, reason and code only."""
    observability.log(
        "compute.kubernetes-request-failed",
        level=logging.WARNING,
        operation=operation,
        status=status,
        reason=reason or None,
        code=code,
        error=error,
    )
