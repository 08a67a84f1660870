"""API errors of the fake Kubernetes API server and their ``Status`` wire form.

Models the apiserver's failure answers: every error is a ``Status`` object with a machine
reason (``NotFound``, ``AlreadyExists``, ``Conflict``, ``Invalid``...) and the HTTP code.
This module only describes errors; it must not decide when they happen.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any


@dataclass(eq=False)
class ApiError(Exception):
    """A request the fake refuses, answered as a ``Status`` with ``code`` and ``reason``."""

    code: int
    reason: str
    message: str
    _: KW_ONLY
    name: str | None = None
    kind: str | None = None
    group: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def status(self) -> dict[str, Any]:
        """The ``Status`` body the apiserver sends for this error."""
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind is not None:
            details["kind"] = self.kind
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if details:
            body["details"] = details
        return body


def not_found(plural: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        404, "NotFound", f'{plural} "{name}" not found', name=name, kind=plural, group=group
    )


def already_exists(plural: str, name: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{plural} "{name}" already exists',
        name=name,
        kind=plural,
        group=group,
    )


def conflict(plural: str, name: str, detail: str, group: str = "") -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {plural} "{name}": {detail}',
        name=name,
        kind=plural,
        group=group,
    )


def invalid(kind: str, name: str, causes: list[str], group: str = "") -> ApiError:
    """422 ``Invalid``: the real message lists every cause after the object's name."""
    joined = ", ".join(causes) if len(causes) == 1 else "[" + ", ".join(causes) + "]"
    return ApiError(
        422, "Invalid", f'{kind} "{name}" is invalid: {joined}', name=name, kind=kind, group=group
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)
