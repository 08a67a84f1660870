"""Keyset pages of a list: where a page starts (the sort key of the previous page's last item)
and how many rows it reads, applied in SQL.

Every resource list is ordered oldest first by ``(created_at, id)``, revisions newest first by
``revision_number``. A window reads the rows strictly after its key, in that order, at most
``limit`` of them, through an index whose leading columns are the list's filter and order: a
page reads what it shows, however long the list, and an item deleted or added meanwhile
moves nothing. A window may also keep only the rows of one name (a lookup by name). Keys
are plain tuples of ints and strings (the web layer makes them opaque cursors).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import sqlalchemy as sa

T = TypeVar("T")
S = TypeVar("S", bound=sa.Select[Any])
Key = tuple[int | str, ...]
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LATEST_MICROS: Final = (dt.datetime(9999, 12, 31, tzinfo=dt.UTC) - _EPOCH) // dt.timedelta(
    microseconds=1
)
_BIGINT: Final = 2**63


@dataclass(frozen=True)
class Window:
    """The rows to read: those after ``after`` (from the start when ``None``), at most
    ``limit`` (all when ``None``), and only those named ``name`` when it is given (an exact
    match on the table's ``name`` column)."""

    after: Key | None = None
    limit: int | None = None
    name: str | None = None


EVERYTHING: Final = Window()


class Page(list[T], Generic[T]):
    """A page of a list: its items, and the key the next page starts after (``None``: the
    last page)."""

    def __init__(self, items: Iterable[T] = (), next_after: Key | None = None) -> None:
        super().__init__(items)
        self.next_after = next_after


@dataclass(frozen=True)
class Order:
    """A list's order: the key of an item, the types the key holds, and how SQL applies it."""

    key: Callable[[Any], Key]
    shape: tuple[type, ...]
    _apply: Callable[[Any, sa.Table, Key | None], Any]
    _valid: Callable[[Key], bool]

    def admits(self, key: tuple[Any, ...]) -> bool:
        """Whether ``key`` (from outside, e.g. a cursor) is a key of this order."""
        return (
            len(key) == len(self.shape)
            and all(type(part) is kind for part, kind in zip(key, self.shape, strict=True))
            and self._valid(key)
        )

    def window(self, query: S, table: sa.Table, window: Window) -> S:
        """``query`` in this order, restricted to ``window``."""
        if window.name is not None:
            query = query.where(table.c.name == window.name)
        query = self._apply(query, table, window.after)
        return query if window.limit is None else query.limit(window.limit)


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable()


def _micros(moment: dt.datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


def _by_creation(query: Any, table: sa.Table, after: Key | None) -> Any:
    query = query.order_by(table.c.created_at, table.c.id)
    if after is None:
        return query
    micros, item_id = after
    moment = _EPOCH + dt.timedelta(microseconds=int(micros))
    return query.where(sa.tuple_(table.c.created_at, table.c.id) > sa.tuple_(moment, item_id))


def _newest_first(query: Any, table: sa.Table, after: Key | None) -> Any:
    query = query.order_by(table.c.created_at.desc(), table.c.id.desc())
    if after is None:
        return query
    micros, item_id = after
    moment = _EPOCH + dt.timedelta(microseconds=int(micros))
    return query.where(sa.tuple_(table.c.created_at, table.c.id) < sa.tuple_(moment, item_id))


def _newest_revision_first(query: Any, table: sa.Table, after: Key | None) -> Any:
    query = query.order_by(table.c.revision_number.desc())
    if after is None:
        return query
    return query.where(table.c.revision_number < -int(after[0]))


BY_CREATION: Final = Order(
    key=lambda item: (_micros(item.created_at), str(item.id)),
    shape=(int, str),
    _apply=_by_creation,
    # ids are ASCII: a NUL or a lone surrogate from a forged cursor never reaches SQL
    _valid=lambda key: 0 <= int(key[0]) <= _LATEST_MICROS and _plain(str(key[1])),
)
"""Oldest first, ties by id: the order of every resource list but revisions."""
NEWEST_FIRST: Final = dataclasses.replace(BY_CREATION, _apply=_newest_first)
"""Newest first, ties by id descending: the operator's view of the work queue."""
NEWEST_REVISION_FIRST: Final = Order(
    key=lambda item: (-int(item.revision_number),),
    shape=(int,),
    _apply=_newest_revision_first,
    _valid=lambda key: -_BIGINT < int(key[0]) < _BIGINT,
)
