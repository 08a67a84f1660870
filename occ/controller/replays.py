"""Replays re-authorize: a repeated request is answered from its record only while the caller
may still do what the first request did.

An ``Idempotency-Key`` record is scoped to the principal that made the first request, so no
other principal is ever answered from it; the web layer authenticates the repeat as any request
(a revoked or disabled key answers 401). ``reauthorize`` then decides the route's own permission
on the resource its path names under current policy, as the first request's use case did: a
role binding revoked since, or a restriction added, answers 403 (audited like every denial), and
the stored answer is not shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from occ import iam
from occ.controller import admission, installation
from occ.state.db import Database, Session

ACTION: Final = "idempotency.replay"


@dataclass(frozen=True, kw_only=True)
class Replay:
    """What the repeated request asks: the route's own permission, and the Namespace and item
    its path names (``None`` for what it does not name)."""

    permission: str
    namespace_id: str | None = None
    item_id: str | None = None


def reauthorize(db: Database, actor_id: str, replay: Replay) -> None:
    """Allow the replay, or raise.

    Raises:
        Forbidden: the caller may no longer use the permission on the resource (audited).
        NotFound: before bootstrap, or the caller may not even read a named resource.
    """
    with admission.guarded(db, actor_id, read_only=True) as session:
        admission.require(
            session,
            actor_id,
            ACTION,
            replay.permission,
            _resource(session, replay),
            request={"permission": replay.permission},
        )


def _resource(session: Session, replay: Replay) -> iam.Resource:
    """What the permission is checked on: the Installation for its own permissions and
    Namespace creation, a Namespace, or the named item in its Namespace (a collection's create
    checks its Namespace)."""
    kind = replay.permission.partition(":")[0]
    if (
        kind == "installation"
        or replay.permission == "namespace:create"
        or replay.namespace_id is None
    ):
        return installation.resource(session)
    if kind == "namespace" or replay.item_id is None:
        return iam.Resource.namespace(replay.namespace_id)
    return iam.Resource(kind, replay.item_id, replay.namespace_id)
