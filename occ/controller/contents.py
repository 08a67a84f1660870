"""What the Configuration and Secret use cases share: reading one item of a live Namespace, and
the page of its items the caller may read.

``kind`` names the item (``configuration``, ``secret``): the permission is ``<kind>:read`` and
the audited action ``<kind>s.read`` or ``<kind>s.list``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from occ import iam
from occ.controller import admission, listing, namespaces
from occ.db import Database, Session
from occ.state import keyset

T = TypeVar("T")


def read(
    db: Database,
    actor_id: str,
    namespace_id: str,
    item_id: str,
    *,
    kind: str,
    get: Callable[[Session, str, str], T | None],
    resource_of: Callable[[T], iam.Resource],
) -> T:
    """The Namespace's item ``get`` finds, if the caller holds ``<kind>:read`` on it.

    Raises:
        NotFound: no such item in this live Namespace, or the caller may not read it (audited).
    """
    admission.require_id("namespace", namespace_id)
    admission.require_id(kind, item_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        namespace = namespaces.live(session, namespace_id)
        item = admission.found(get(session, namespace.id, item_id), kind)
        admission.require(
            session,
            actor_id,
            f"{kind}s.read",
            f"{kind}:read",
            resource_of(item),
            hide_unless_readable=True,
        )
        return item


def page(
    db: Database,
    actor_id: str,
    namespace_id: str,
    window: keyset.Window,
    *,
    kind: str,
    list_in: Callable[[Session, str, keyset.Window], Sequence[T]],
    resource_of: Callable[[T], iam.Resource],
) -> keyset.Page[T]:
    """The page ``window`` asks for of the Namespace's items the caller holds ``<kind>:read``
    on (``list_in`` reads them in creation order).

    An empty page needs ``namespace:read`` or ``<kind>:read`` on the Namespace itself.

    Raises:
        NotFound: no such live Namespace, or the caller may read neither it, nor such items in
            it, nor any of its items (audited).
    """
    admission.require_id("namespace", namespace_id)
    permission = f"{kind}:read"
    with admission.guarded(db, actor_id, read_only=True) as session:
        namespace = namespaces.live(session, namespace_id)
        visible = listing.readable_page(
            session,
            actor_id,
            permission,
            resource_of=resource_of,
            read=lambda rows: list_in(session, namespace.id, rows),
            window=window,
        )
        if not visible:
            parent = iam.Resource.namespace(namespace.id)
            if not iam.authorize(session, actor_id, "namespace:read", parent).allowed:
                admission.require(
                    session,
                    actor_id,
                    f"{kind}s.list",
                    permission,
                    parent,
                    hide_unless_readable=True,
                )
        return visible
