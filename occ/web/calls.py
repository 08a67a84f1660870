"""How a view calls its use case: on the application's database, as the authenticated caller.

``item`` answers the use case's value in the ``data`` envelope, ``page`` the list page its
query's window asks for, ``filtered`` the value of a listing use case for the filters and
``limit`` of its query, ``admitted`` the value of a use case that enqueued work, after
nudging the workers. Each view still names its use case and every argument it passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import flask

from occ.state import keyset
from occ.web import access, pagination
from occ.web.schemas import common

T = TypeVar("T")


def context() -> Any:
    """The application's ``occ`` extension (its runtime and work nudger)."""
    return flask.current_app.extensions["occ"]


def call(use_case: Callable[..., T], **arguments: Any) -> T:
    """``use_case(database, actor_id=<the caller>, **arguments)``."""
    return use_case(context().runtime.database, actor_id=access.principal_id(), **arguments)


def item(use_case: Callable[..., Any], **arguments: Any) -> dict[str, Any]:
    """The use case's value in the ``data`` envelope."""
    return common.wrap(call(use_case, **arguments))


def filtered(use_case: Callable[..., T], query: dict[str, Any], *filters: str) -> T:
    """``call`` with the query's ``limit`` and each of ``filters`` (``None`` where the query
    leaves one out)."""
    return call(use_case, limit=query["limit"], **{name: query.get(name) for name in filters})


def admitted(use_case: Callable[..., Any], **arguments: Any) -> dict[str, Any]:
    """Like ``item``, for a use case that enqueued work: the workers are nudged to claim it."""
    value = call(use_case, **arguments)
    context().nudger.nudge()
    return common.wrap(value)


def page(
    use_case: Callable[..., keyset.Page[Any]],
    query: dict[str, Any],
    *,
    order: keyset.Order = pagination.BY_CREATION,
    **arguments: Any,
) -> dict[str, Any]:
    """The page (in ``order``) that the ``limit`` and ``cursor`` of ``query`` ask for."""
    return pagination.page(call(use_case, window=pagination.window(query, order), **arguments))
