"""The startup warnings a runtime reported, judged before a deployment may succeed with them.

A driver reads them from the runtime (``base.Ready.warnings``, or ``base.Activation.warnings``
when its runtime starts only at activation, as ``ssh``'s does); the worker keeps them only
when every one is a reason-code-shaped ``code`` with a bounded ``detail``, none repeats, and
there are at most ``MAX_WARNINGS``: malformed evidence cannot establish success, so the pass
fails ``INVALID_DRIVER_OBSERVATION`` instead. A deploy's success result carries them
(``{"warnings": [...]}``), as does its ``worker.completed`` event; maintenance never writes
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from occ.drivers import gateway_warnings
from occ.drivers.compute import base

MAX_WARNINGS: Final = gateway_warnings.MAX_WARNINGS

Judged = tuple[dict[str, str], ...]


def judged(warnings: Sequence[base.StartupWarning]) -> Judged | None:
    """The warnings as a deployment result keeps them, in the runtime's order; ``None`` when
    they are malformed (a bad code or detail, a repeat, too many)."""
    if len(warnings) > MAX_WARNINGS or len(set(warnings)) != len(warnings):
        return None
    for warning in warnings:
        if not (
            isinstance(warning, base.StartupWarning)
            and isinstance(warning.code, str)
            and isinstance(warning.detail, str)
            and gateway_warnings.CODE.fullmatch(warning.code)
            and gateway_warnings.DETAIL.fullmatch(warning.detail)
        ):
            return None
    return tuple({"code": w.code, "detail": w.detail} for w in warnings)
