"""``ETag`` on a resource's GET and ``If-Match`` on its PATCH and DELETE.

The validator is strong (``occ.controller.preconditions.tag``): ``"g<generation>"`` for
resources that count their changes (Configurations), otherwise a digest of the resource id
and ``updatedAt`` (Agents, Namespaces, Secrets). The decisive check is the use case's: the
route hands it ``expected()`` and it compares the row it holds locked, in the change's own
transaction, so of two changes racing with the same tag exactly one goes through. Before the
view, ``check_if_match`` answers a plainly stale tag early through the route's own GET view
(same authorization, so a hidden resource stays 404), and refuses any precise tag on a
resource that has no validator. A stale tag answers 412 ``PRECONDITION_FAILED`` and changes
nothing; without ``If-Match`` nothing changes. This module must not write.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

import flask
from werkzeug import exceptions as http

from occ.controller import preconditions

CONDITIONAL_METHODS: Final = frozenset({"PATCH", "DELETE"})


def entity_tag(data: Any) -> str | None:
    """The strong validator of one resource's representation, or ``None`` when it has none."""
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return None
    if isinstance(data.get("generation"), int):
        return preconditions.tag(data["id"], generation=data["generation"])
    if isinstance(data.get("updatedAt"), str):
        updated_at = dt.datetime.fromisoformat(data["updatedAt"])
        return preconditions.tag(data["id"], updated_at=updated_at)
    return None


def expected() -> preconditions.Expected | None:
    """The request's ``If-Match`` for the use case to check, or ``None`` without one."""
    header = flask.request.headers.get("If-Match")
    if header is None:
        return None
    return preconditions.Expected(
        frozenset(part.strip() for part in header.split(",") if part.strip())
    )


def tag_response(response: flask.Response) -> flask.Response:
    """``after_request``: an ``ETag`` on a successful GET of one resource."""
    if flask.request.method != "GET" or response.status_code != 200 or not response.is_json:
        return response
    body = response.get_json(silent=True)
    tag = entity_tag(body.get("data")) if isinstance(body, dict) else None
    if tag is not None:
        response.headers["ETag"] = tag
    return response


def check_if_match() -> None:
    """``before_request``: 412 when a PATCH's or DELETE's ``If-Match`` names no current tag.

    A request routing refused (no such URL, or a method it does not allow) is left to its
    404 or 405: it was not authenticated, and no view of it runs."""
    if flask.request.url_rule is None:
        return
    wanted = expected()
    if wanted is not None and flask.request.method in CONDITIONAL_METHODS:
        preconditions.check(wanted, _current_tag())


def _current_tag() -> str | None:
    """The tag of the resource at the request's URL, read through its GET view."""
    adapter = flask.current_app.url_map.bind("")
    try:
        endpoint, arguments = adapter.match(flask.request.path, method="GET")
    except (http.NotFound, http.MethodNotAllowed):
        return None
    view: Any = flask.current_app.view_functions[endpoint]
    response = flask.current_app.make_response(view(**arguments))
    body = response.get_json(silent=True)
    return entity_tag(body.get("data")) if isinstance(body, dict) else None
