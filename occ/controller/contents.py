"""What the Configuration and Secret use cases share: admitting a new item into a Namespace,
reading one item of a live Namespace, and the page of its items the caller may read.

``kind`` names the item (``configuration``, ``secret``): the permissions are
``<kind>:create`` and ``<kind>:read``, the audited actions ``<kind>s.create``, ``<kind>s.read``
and ``<kind>s.list``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from occ import iam
from occ.controller import admission, listing, namespaces
from occ.db import Database, Session
from occ.state import keyset
from occ.state import namespaces as namespace_rows

T = TypeVar("T")


def admit_creation(
    session: Session, actor_id: str, namespace_id: str, *, kind: str, request: Mapping[str, Any]
) -> tuple[namespace_rows.Namespace, iam.Decision]:
    """The live Namespace a new ``kind`` goes into, under its row lock, and the decision
    allowing ``<kind>:create`` on it.

    Raises:
        NotFound: no such live Namespace, or the caller may not read it (audited).
        Forbidden: the caller may read the Namespace but not create here (audited).
        NamespaceNotReady: the Namespace is not ``ready``.
    """
    namespace = namespaces.live(session, namespace_id, lock=True)
    decision = admission.require(
        session,
        actor_id,
        f"{kind}s.create",
        f"{kind}:create",
        iam.Resource.namespace(namespace.id),
        hide_unless_readable=True,
        request=request,
    )
    admission.require_ready(namespace.status)
    return namespace, decision


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
