"""A claim's start joined with the read-only reload of what its pass needs.

``work_queue.start`` exchanges a dispatch token for a run token; a pass then reloads its
subject before it checks anything. For Namespace work both are one statement
(``sql/starts.sql``): the same fenced UPDATE, and the item's Namespace read beside it, so a
pass saves a round trip and the SQLAlchemy execution of a separate read. A spent or expired
token starts nothing and reads nothing. Never commits (run it on an autocommit connection, or
in the caller's transaction).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from occ.state import hot_statements, namespaces, queries, rows, values, work_queue, work_rows

SQL: Final = queries.load("starts.sql")
HOT: Final = hot_statements.compile_all(SQL, "start_namespace_work")

_NAMESPACE_PREFIX: Final = "ns_"


@dataclass(frozen=True)
class NamespaceStart:
    """A started Namespace claim and its Namespace as the start read it (``None``: gone)."""

    claim: values.Claim
    namespace: namespaces.Namespace | None


def start_namespace_work(
    target: hot_statements.Target,
    policy: values.QueuePolicy,
    work_id: str,
    dispatch_token: uuid.UUID,
) -> NamespaceStart | None:
    """``work_queue.start_token`` for a Namespace item, with its Namespace; ``None`` when the
    token is spent or its dispatch lease lapsed."""
    params = work_queue.start_parameters(policy, work_id, dispatch_token)
    row = hot_statements.first(target, HOT["start_namespace_work"], params)
    if row is None:
        return None
    columns = rows.unprefixed(row, _NAMESPACE_PREFIX)
    namespace = None if columns["id"] is None else namespaces.of_columns(columns)
    return NamespaceStart(work_rows.claim_of(row), namespace)
