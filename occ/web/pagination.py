"""One cursor pagination for every resource list: ``limit``, ``cursor``, ``meta.nextCursor``.

A page is cut from the list the use case answered (already filtered by the read
permission, in its own order): the cursor is the opaque position of the page's last item
(its sort key, base64url JSON), so a page after an item that was deleted meanwhile still
starts at the right place. This module must not query anything itself.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import flask
import marshmallow as ma
from marshmallow import fields, validate

from occ import errors
from occ.web.schemas import common

DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 500
MAX_CURSOR_CHARS: Final = 512
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

SortKey = tuple[int | str, ...]


@dataclass(frozen=True)
class Ordering:
    """How a list is ordered: ascending ``key`` of each item, and the types that key holds."""

    key: Callable[[Any], SortKey]
    shape: tuple[type, ...]


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)


def _micros(moment: dt.datetime) -> int:
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


BY_CREATION: Final = Ordering(
    key=lambda item: (_micros(_field(item, "created_at")), str(_field(item, "id"))),
    shape=(int, str),
)
"""Oldest first, ties by id: the order of every resource list but revisions."""
NEWEST_REVISION_FIRST: Final = Ordering(
    key=lambda item: (-int(_field(item, "revision_number")),), shape=(int,)
)


class PageQuery(ma.Schema):
    """``limit`` and ``cursor``; every other query parameter is refused."""

    class Meta:
        unknown = ma.RAISE

    limit = fields.Integer(
        load_default=DEFAULT_LIMIT,
        strict=False,
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": "Most items in the page."},
    )
    cursor = fields.String(
        validate=validate.Length(min=1, max=MAX_CURSOR_CHARS),
        metadata={"description": "``meta.nextCursor`` of the previous page."},
    )


class PageMeta(common.Meta):
    next_cursor = fields.String(
        data_key="nextCursor",
        required=True,
        allow_none=True,
        metadata={"description": "The next page's ``cursor``; ``null`` on the last page."},
    )


_ENVELOPES: dict[str, type[ma.Schema]] = {}


def envelope(data: type[ma.Schema]) -> type[ma.Schema]:
    """``{"data": [<data>...], "meta": {"requestId": ..., "nextCursor": ...}}``."""
    if data.__name__ not in _ENVELOPES:
        _ENVELOPES[data.__name__] = ma.Schema.from_dict(
            {
                "data": fields.List(fields.Nested(data), required=True),
                "meta": fields.Nested(PageMeta, required=True),
            },
            name=data.__name__ + "Page",
        )
    return _ENVELOPES[data.__name__]


def page(items: Sequence[Any], query: dict[str, Any], ordering: Ordering) -> dict[str, Any]:
    """The envelope of the page ``query`` asks for."""
    remaining = list(items)
    if "cursor" in query:
        after = decode(query["cursor"], ordering)
        remaining = [item for item in remaining if ordering.key(item) > after]
    limit = int(query["limit"])
    shown = remaining[:limit]
    next_cursor = encode(ordering.key(shown[-1])) if len(remaining) > limit else None
    return {
        "data": shown,
        "meta": {"request_id": flask.g.get("request_id"), "next_cursor": next_cursor},
    }


def encode(key: SortKey) -> str:
    raw = json.dumps(list(key), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str, ordering: Ordering) -> SortKey:
    """The sort key a cursor names, or ``InvalidInput`` at ``/query/cursor``."""
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        value = None
    if (
        not isinstance(value, list)
        or len(value) != len(ordering.shape)
        or not all(type(part) is kind for part, kind in zip(value, ordering.shape, strict=True))
    ):
        raise errors.InvalidInput.at("/query/cursor", "not a cursor of this list")
    return tuple(value)
