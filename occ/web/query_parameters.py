"""Refuse query parameters a route does not document, before anything else reads them.

A misspelt filter (``?namspaceId=``) silently ignored would answer the wrong list; every
route therefore refuses what its documented query schema does not name, with a
``/query/<name>`` pointer. This module reads the documentation flask-smorest attaches to a
view; it must not validate the values (the route's own schema does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import flask
import marshmallow as ma

from occ.foundation import errors
from occ.web import problems

_ACCEPTED = "_occ_query_parameters"
View = TypeVar("View", bound=Callable[..., Any])


def accepts(*names: str) -> Callable[[View], View]:
    """Declare the query parameters of a browser route (one outside the API's document);
    none names every parameter (a provider's callback, whose parameters the provider picks)."""

    def declare(view: View) -> View:
        setattr(view, _ACCEPTED, frozenset(names) if names else None)
        return view

    return declare


def documented(view: Callable[..., Any]) -> frozenset[str] | None:
    """The query parameter names a view's argument schemas (or ``accepts``) declare; ``None``
    when it takes any."""
    if hasattr(view, _ACCEPTED):
        accepted: frozenset[str] | None = getattr(view, _ACCEPTED)
        return accepted
    parameters = getattr(view, "_apidoc", {}).get("arguments", {}).get("parameters", [])
    names: set[str] = set()
    for parameter in parameters:
        if parameter.get("in") != "query":
            continue
        schema = parameter["schema"]
        instance = schema() if isinstance(schema, type) else schema
        assert isinstance(instance, ma.Schema)
        names.update(field.data_key or name for name, field in instance.fields.items())
    return frozenset(names)


def refuse_unknown() -> None:
    """``before_request``: 400 when the query string names a parameter the route lacks."""
    if not flask.request.args:
        return
    view = flask.current_app.view_functions.get(flask.request.endpoint or "")
    allowed = documented(view) if view is not None else frozenset()
    if allowed is None:
        return
    unknown = sorted(set(flask.request.args) - allowed)
    if unknown:
        raise problems.InvalidRequest(
            "the request names unknown query parameters",
            [errors.FieldError(("query", name), "unknown parameter") for name in unknown],
        )
