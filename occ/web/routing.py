"""The blueprint base: flask-smorest with occ's strict argument parser (``json_input``).

flask-smorest ships no type hints; the decorators a route module applies to its views
(``route``, ``response``, ``doc``) are declared here with the arguments occ uses, so mypy
checks every view they decorate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import flask_smorest
import marshmallow as ma

from occ.web import json_input

View = TypeVar("View", bound=Callable[..., Any])


class Blueprint(flask_smorest.Blueprint):  # type: ignore[misc]
    """A documented blueprint whose request bodies go through ``json_input``."""

    ARGUMENTS_PARSER = json_input.parser

    def route(self, rule: str, *, methods: list[str]) -> Callable[[View], View]:
        """Register the view for ``methods`` on ``rule``, in the application and its
        documentation."""
        register: Callable[[View], View] = super().route(rule, methods=methods)
        return register

    def response(
        self,
        status: int,
        schema: type[ma.Schema] | None = None,
        *,
        content_type: str | None = None,
        description: str | None = None,
    ) -> Callable[[View], View]:
        """Serialize the view's answer with ``schema`` and document it as ``status``."""
        answer: Callable[[View], View] = super().response(
            status, schema, content_type=content_type, description=description
        )
        return answer

    def arguments(
        self,
        schema: type[ma.Schema],
        *,
        location: str = "json",
        required: bool = True,
        unknown: str | None = None,
        example: object = None,
    ) -> Callable[[View], View]:
        """Parse the request's ``schema`` (its body, or ``location="query"``) for the view;
        ``example`` documents a body."""
        options: dict[str, Any] = {"location": location, "required": required}
        if unknown is not None:
            options["unknown"] = unknown
        if example is not None:
            options["example"] = example
        parse: Callable[[View], View] = super().arguments(schema, **options)
        return parse

    def doc(
        self,
        *,
        security: list[dict[str, list[str]]] | None = None,
        responses: dict[str, Any] | None = None,
    ) -> Callable[[View], View]:
        """Add ``security`` and ``responses`` to the view's OpenAPI operation as they are."""
        given = {"security": security, "responses": responses}
        document: Callable[[View], View] = super().doc(
            **{key: value for key, value in given.items() if value is not None}
        )
        return document
