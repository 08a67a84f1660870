"""Who may call a route: every view declares its permission (or that it is public).

The declaration is what the authorization-matrix test reads; the admission use case is what
enforces it, against the exact resource.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import flask

from occ.controller import authentication
from occ.foundation import errors

View = TypeVar("View", bound=Callable[..., Any])

PUBLIC: Final = ("public",)
_ATTRIBUTE: Final = "_occ_permissions"


def requires(*permissions: str) -> Callable[[View], View]:
    """Declare the permissions a route needs (the first is the route's own)."""

    def declare(view: View) -> View:
        setattr(view, _ATTRIBUTE, permissions)
        return view

    return declare


def public(view: View) -> View:
    """Declare a route that needs no credentials."""
    setattr(view, _ATTRIBUTE, PUBLIC)
    return view


def declared(view: Callable[..., Any]) -> tuple[str, ...] | None:
    """What a view declared, or ``None`` when it declared nothing."""
    return getattr(view, _ATTRIBUTE, None)


def authenticate_request() -> None:
    """``before_request``: set ``g.principal_id`` from the Bearer key (unless the route is
    public)."""
    view = flask.current_app.view_functions.get(flask.request.endpoint or "")
    if view is None or declared(view) == PUBLIC:
        return
    header = flask.request.headers.get("Authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented.strip():
        raise errors.Unauthenticated("send an API key as 'Authorization: Bearer <key>'")
    context = flask.current_app.extensions["occ"]
    flask.g.principal_id = authentication.authenticate(
        context.runtime.database,
        presented_key=presented.strip(),
        pepper=context.runtime.settings.api_key_pepper,
    )


def principal_id() -> str:
    """The authenticated caller."""
    return str(flask.g.principal_id)
