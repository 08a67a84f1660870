"""``Location`` on every 201 and 202: where the created (or accepted) resource can be read.

A view declares the endpoint its answer points at; the URL is built from the request's path
arguments plus, for a new resource, its id taken from the value the view returns (the
deployment's id for a deploy). This module must not change the body or the status.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec

import flask

P = ParamSpec("P")
Enveloped = dict[str, Any]
"""What a view answers: its value in the ``data`` envelope."""
Located = tuple[Enveloped, dict[str, str]]
"""The same answer with its ``Location`` header."""


def at(
    endpoint: str, **from_value: str
) -> Callable[[Callable[P, Enveloped]], Callable[P, Located]]:
    """Point ``Location`` at ``endpoint``; ``from_value`` maps URL arguments to attributes of
    the enveloped value (``agent_id="id"``)."""

    def declare(view: Callable[P, Enveloped]) -> Callable[P, Located]:
        @functools.wraps(view)
        def located(*args: P.args, **kwargs: P.kwargs) -> Located:
            result = view(*args, **kwargs)
            value = result["data"]
            arguments: dict[str, Any] = {
                name: kwargs[name] for name in (flask.request.view_args or {})
            }
            arguments.update(
                {argument: getattr(value, attribute) for argument, attribute in from_value.items()}
            )
            return result, {"Location": flask.url_for(endpoint, **arguments)}

        return located

    return declare
