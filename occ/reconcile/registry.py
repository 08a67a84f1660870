"""Every work kind's handler, by kind: what the executor runs and recovery settles.

A new kind declares its ``kinds.Handler`` beside its reconciler and is listed here once;
``kinds.index`` refuses a kind without a handler or with two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from occ.reconcile import (
    agent_delete,
    agent_stop,
    credential_withdrawal,
    kinds,
    namespace,
    revision,
)
from occ.state.work_keys import WorkKind

HANDLERS: Final[Mapping[WorkKind, kinds.Handler[Any]]] = kinds.index(
    namespace.READY,
    namespace.DELETED,
    agent_stop.HANDLER,
    agent_delete.HANDLER,
    credential_withdrawal.HANDLER,
    revision.DEPLOYMENT,
    revision.MAINTENANCE,
)
