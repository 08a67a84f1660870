"""An administered collection: the create, list, get and delete of one resource, from a table.

The IAM collections are one shape: a POST that passes named body fields to its use case and
answers 201 with ``Location`` at the new item, a list page, and a get and a delete of one item
by its id, each passing the id to its use case. A route module declares that table (each
operation's endpoint, use case and docstring, which become its OpenAPI summary and
description) and ``declare`` registers the four views on the module's blueprint through
``operation``, with the blueprint's permissions, as if they had been written by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import marshmallow as ma

from occ.web import calls, locations
from occ.web.routes import blueprints


@dataclasses.dataclass(frozen=True)
class Operation:
    """One view of a collection: its endpoint name, its use case and its docstring (``None``
    documents it with the conventional summary only)."""

    endpoint: str
    use_case: Callable[..., Any]
    doc: str | None = None


@dataclasses.dataclass(frozen=True)
class Create:
    """The create view: its endpoint name, its use case, the body's schema, the body fields
    passed to the use case (by the same names) and its docstring."""

    endpoint: str
    use_case: Callable[..., Any]
    body: type[ma.Schema]
    fields: tuple[str, ...]
    doc: str


def declare(
    blueprint: blueprints.Blueprint,
    *,
    item: type[ma.Schema],
    id_parameter: str,
    create: Create,
    list: Operation,
    get: Operation,
    delete: Operation,
) -> None:
    """Register ``POST ""``, ``GET ""``, ``GET /<id_parameter>`` and ``DELETE /<id_parameter>``
    on ``blueprint``, each answering ``item`` (the list a page of them)."""
    one = f"/<{id_parameter}>"
    created_at = locations.at(f"{blueprint.name}.{get.endpoint}", **{id_parameter: "id"})
    register = blueprint.operation
    register("POST", "", body=create.body, created=item)(created_at(_creating(blueprint, create)))
    register("GET", "", page=item)(_listing(blueprint, list))
    register("GET", one, item=item)(_reading(blueprint, get))
    register("DELETE", one, item=item)(_reading(blueprint, delete))


def _creating(blueprint: blueprints.Blueprint, create: Create) -> Callable[..., Any]:
    """The create view: the use case's new item, from the body's ``fields``."""

    def view(body: dict[str, Any]) -> dict[str, Any]:
        return calls.item(create.use_case, **{field: body[field] for field in create.fields})

    return _named(view, blueprint, create)


def _listing(blueprint: blueprints.Blueprint, operation: Operation) -> Callable[..., Any]:
    """The list view: the page the query asks for."""

    def view(query: dict[str, Any]) -> dict[str, Any]:
        return calls.page(operation.use_case, query)

    return _named(view, blueprint, operation)


def _reading(blueprint: blueprints.Blueprint, operation: Operation) -> Callable[..., Any]:
    """A view of one item (get or delete): the use case's answer for the id in the path."""

    def view(**path: str) -> dict[str, Any]:
        return calls.item(operation.use_case, **path)

    return _named(view, blueprint, operation)


def _named(
    view: Callable[..., Any], blueprint: blueprints.Blueprint, operation: Operation | Create
) -> Callable[..., Any]:
    """The view under its endpoint's name, with its docstring, in the route module."""
    view.__name__ = view.__qualname__ = operation.endpoint
    view.__doc__ = operation.doc
    view.__module__ = blueprint.import_name
    return view
