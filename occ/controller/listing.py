"""A page of a list as the caller sees it, read from the database in keyset windows.

A list with one authorization decision for all its items reads one window: the page and one
row more (which says whether a next page exists). A list filtered by a per-item read
permission reads window after window and keeps what the caller may read, until the page
holds one visible item more than asked or the list ran out: a page is never short while more
visible items exist, and reads no further than it needs. A list of one parent's items whose
page comes out empty answers as the parent does: 404 unless the caller may read the parent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

from occ import iam
from occ.controller import admission
from occ.state import keyset
from occ.state.db import Session

T = TypeVar("T")

FILTERED_BATCH: Final = 100
"""The fewest rows a window of a filtered list reads (a page of 1 should not read 2 at a
time while its caller sees one item in a thousand)."""


def page(
    read: Callable[[keyset.Window], Sequence[T]],
    window: keyset.Window,
    order: keyset.Order,
    keep: Callable[[Sequence[T]], Sequence[T]] | None = None,
) -> keyset.Page[T]:
    """The page ``window`` asks for, from ``read`` (rows in ``order``), filtered by ``keep``."""
    if window.limit is None:
        rows = read(window)
        return keyset.Page(rows if keep is None else keep(rows))
    size = window.limit + 1 if keep is None else max(window.limit + 1, FILTERED_BATCH)
    shown: list[T] = []
    after = window.after
    while True:
        rows = read(dataclasses.replace(window, after=after, limit=size))
        shown.extend(rows if keep is None else keep(rows))
        if len(shown) > window.limit:
            return keyset.Page(shown[: window.limit], order.key(shown[window.limit - 1]))
        if len(rows) < size:
            return keyset.Page(shown)
        after = order.key(rows[-1])


def readable_page(
    session: Session,
    actor_id: str,
    permission: str,
    *,
    resource_of: Callable[[T], iam.Resource],
    read: Callable[[keyset.Window], Sequence[T]],
    window: keyset.Window,
    order: keyset.Order = keyset.BY_CREATION,
) -> keyset.Page[T]:
    """The page of the items the caller holds ``permission`` on."""
    return page(
        read,
        window,
        order,
        lambda rows: admission.readable(session, actor_id, permission, rows, resource_of),
    )


def readable_children(
    session: Session,
    actor_id: str,
    action: str,
    permission: str,
    parent: iam.Resource,
    *,
    resource_of: Callable[[T], iam.Resource],
    read: Callable[[keyset.Window], Sequence[T]],
    window: keyset.Window,
    order: keyset.Order = keyset.BY_CREATION,
) -> keyset.Page[T]:
    """The page of ``parent``'s items the caller holds ``permission`` on; an empty page needs
    ``<kind>:read`` on ``parent`` (else ``action`` is denied, audited, as ``NotFound``)."""
    visible = readable_page(
        session,
        actor_id,
        permission,
        resource_of=resource_of,
        read=read,
        window=window,
        order=order,
    )
    if not visible:
        admission.require(
            session,
            actor_id,
            action,
            f"{parent.kind}:read",
            parent,
            hide_unless_readable=True,
        )
    return visible
