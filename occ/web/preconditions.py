"""``ETag`` on a resource's GET and ``If-Match`` on its PATCH and DELETE.

The validator is strong: ``"g<generation>"`` for resources that count their changes
(Configurations), otherwise a digest of the resource id and ``updatedAt`` (Agents,
Namespaces). A PATCH or DELETE that sends ``If-Match`` is checked against the resource as its
GET answers it (same authorization, so a hidden resource stays 404); a stale one answers 412
``PRECONDITION_FAILED`` and changes nothing. Without ``If-Match`` nothing changes. This module
must not write: it reads through the route's own GET view.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import flask
from werkzeug import exceptions as http

from occ.web import problems

CONDITIONAL_METHODS: Final = frozenset({"PATCH", "DELETE"})


def entity_tag(data: Any) -> str | None:
    """The strong validator of one resource's representation, or ``None`` when it has none."""
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return None
    if isinstance(data.get("generation"), int):
        return f'"g{data["generation"]}"'
    if isinstance(data.get("updatedAt"), str):
        digest = hashlib.sha256(f"{data['id']}\n{data['updatedAt']}".encode()).hexdigest()
        return f'"u{digest[:32]}"'
    return None


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
    """``before_request``: 412 when a PATCH's or DELETE's ``If-Match`` names no current tag."""
    header = flask.request.headers.get("If-Match")
    if header is None or flask.request.method not in CONDITIONAL_METHODS:
        return
    wanted = {part.strip() for part in header.split(",") if part.strip()}
    current = _current_tag()
    if "*" in wanted and current is not None:
        return
    if current is None or current not in wanted:
        raise problems.PreconditionFailed(
            "the resource changed since it was read (If-Match does not match its ETag)"
        )


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
