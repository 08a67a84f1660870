"""Whether the caller may see a route's Namespace at all, asked before its body is validated.

A caller who may not see a Namespace must learn nothing about it, not even that the body it
sent would have been refused: the web layer asks this before it answers a body error. It
writes nothing (the use case that runs on a valid body audits its own denials).
"""

from __future__ import annotations

from collections.abc import Iterable

from occ import iam
from occ.foundation import ids
from occ.state import namespaces
from occ.state.db import Database


def namespace_visible(
    db: Database, *, actor_id: str, namespace_id: str, permissions: Iterable[str]
) -> bool:
    """``True`` when the Namespace is live and the caller holds ``namespace:read`` or one of
    ``permissions`` on it (what the use cases' ``hide_unless_readable`` would let through)."""
    if not ids.is_valid("namespace", namespace_id):
        return False
    with db.snapshot() as session:
        namespace = namespaces.get(session, namespace_id)
        if namespace is None or not namespace.live:
            return False
        resource = iam.Resource.namespace(namespace.id)
        wanted = ["namespace:read", *permissions]
        return any(iam.authorize(session, actor_id, p, resource).allowed for p in wanted)
