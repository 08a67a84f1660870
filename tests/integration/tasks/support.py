"""Namespaces admitted through the use case for the worker tests, whose real workers then
reconcile them, and the ids of their work items."""

from __future__ import annotations

import uuid

from occ.controller import namespaces
from occ.state.db import Database


def admit_namespaces(db: Database, admin: str, count: int, *, prefix: str = "ns") -> list[str]:
    """Create ``count`` Namespaces named ``prefix`` and a random suffix; their ids, in order."""
    return [
        namespaces.create_namespace(
            db, admin, namespaces.CreateNamespace(name=f"{prefix}-{uuid.uuid4().hex[:8]}")
        ).id
        for _ in range(count)
    ]


def ready_work_ids(namespace_ids: list[str]) -> list[str]:
    """The ids of the work items that make the Namespaces ready, in order."""
    return [f"namespace:{n}:reconcile:ready" for n in namespace_ids]
