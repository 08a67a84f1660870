"""One cursor pagination for every resource list: ``limit``, ``cursor``, ``meta.nextCursor``
(and ``name`` on a list of named items).

The use case reads the page in SQL (``occ.state.keyset``): ``window`` turns the query into
the rows to read, after the cursor's sort key, and ``page`` makes the envelope of the page it
answered. The cursor is the opaque position of a page's last item (its sort key, base64url
JSON), so a page after an item that was deleted meanwhile still starts at the right place. It
is bound to its list: the request's path and its other query parameters (filters) are hashed
into it, and a cursor shown by one list, or by the same list under other filters, is refused
at ``/query/cursor``. This module must not query anything itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import unicodedata
from typing import Any, Final

import flask
import marshmallow as ma
from marshmallow import fields, validate

from occ.state import keyset
from occ.web import problems
from occ.web.schemas import common

DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 500
MAX_CURSOR_CHARS: Final = 512
MAX_NAME_CHARS: Final = 253
LIST_ID_CHARS: Final = 12
"""Hex digits of the list's hash a cursor carries (a check against mix-ups, not a secret)."""
_PAGE_PARAMETERS: Final = frozenset({"cursor", "limit"})

BY_CREATION: Final = keyset.BY_CREATION
"""Oldest first, ties by id: the order of every resource list but revisions."""
NEWEST_REVISION_FIRST: Final = keyset.NEWEST_REVISION_FIRST


def _no_control_characters(value: str) -> None:
    # no name holds one (admission.name), and PostgreSQL text cannot hold a NUL
    if any(unicodedata.category(character) in ("Cc", "Cs") for character in value):
        raise ma.ValidationError("must not contain control characters")


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


class NamedPageQuery(PageQuery):
    """``limit``, ``cursor`` and ``name``: a list of named items, which a client searches by
    name instead of reading it whole."""

    name = fields.String(
        validate=[
            validate.Length(min=1, max=MAX_NAME_CHARS),
            _no_control_characters,
        ],
        metadata={"description": "Only the item of exactly this name.", "example": "team-a"},
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


def window(query: dict[str, Any], order: keyset.Order) -> keyset.Window:
    """The rows the page ``query`` asks for: after its cursor, at most ``limit``, of its
    ``name`` if it gives one."""
    after = decode(query["cursor"], order) if "cursor" in query else None
    return keyset.Window(after=after, limit=int(query["limit"]), name=query.get("name"))


def page(items: keyset.Page[Any]) -> dict[str, Any]:
    """The envelope of a page the use case answered."""
    next_cursor = None if items.next_after is None else encode(items.next_after)
    return {
        "data": list(items),
        "meta": {"request_id": flask.g.get("request_id"), "next_cursor": next_cursor},
    }


def encode(key: keyset.Key) -> str:
    """The cursor of the position ``key`` in the list this request reads."""
    raw = json.dumps([_this_list(), *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str, ordering: keyset.Order) -> keyset.Key:
    """The sort key a cursor of this request's list names, or ``InvalidRequest`` at
    ``/query/cursor``."""
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        value = None
    if (
        not isinstance(value, list)
        or value[:1] != [_this_list()]
        or not ordering.admits(tuple(value[1:]))
    ):
        raise problems.InvalidRequest.at(("query", "cursor"), "not a cursor of this list")
    return tuple(value[1:])


def _this_list() -> str:
    """What identifies the list this request reads: its path and its filters (every query
    parameter but the page's own), hashed short."""
    filters = sorted(
        (name, value)
        for name, value in flask.request.args.items(multi=True)
        if name not in _PAGE_PARAMETERS
    )
    identity = json.dumps([flask.request.path, filters], separators=(",", ":")).encode()
    return hashlib.sha256(identity).hexdigest()[:LIST_ID_CHARS]
