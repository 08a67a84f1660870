"""An administered collection: the create, list, get and delete of one resource, from a table.

The IAM collections are one shape: a POST that passes the command it makes of the body to its
use case and answers 201 with ``Location`` at the new item, a list page, and a get and a delete
of one item by its id (the get passes the id, the delete a command made of it). A route module
declares that table (each operation's endpoint, use case, command and docstring, which become
its OpenAPI summary and description) and ``declare`` registers the four views on the module's
blueprint through ``operation``, with the blueprint's permissions, as if they had been written
by hand.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import marshmallow as ma

from occ.state import keyset
from occ.state.db import Database
from occ.web import calls, locations
from occ.web.routes import blueprints

C = TypeVar("C")


@dataclasses.dataclass(frozen=True)
class Listing:
    """The list view: its endpoint name, its use case and its docstring."""

    endpoint: str
    use_case: Callable[[Database, str, keyset.Window], keyset.Page[Any]]
    doc: str


@dataclasses.dataclass(frozen=True)
class Reading:
    """The get view: its endpoint name, its use case (given the id in the path) and its
    docstring (``None`` documents it with the conventional summary only)."""

    endpoint: str
    use_case: Callable[[Database, str, str], object]
    doc: str | None = None


@dataclasses.dataclass(frozen=True)
class Create(Generic[C]):
    """The create view: its endpoint name, its use case, the body's schema, the command the
    use case takes (made from the body) and its docstring."""

    endpoint: str
    use_case: Callable[[Database, str, C], object]
    body: type[ma.Schema]
    command: Callable[[dict[str, Any]], C]
    doc: str


@dataclasses.dataclass(frozen=True)
class Delete(Generic[C]):
    """The delete view: its endpoint name, its use case, the command the use case takes (made
    from the id in the path) and its docstring."""

    endpoint: str
    use_case: Callable[[Database, str, C], object]
    command: Callable[[str], C]
    doc: str


def declare(
    blueprint: blueprints.Blueprint,
    *,
    item: type[ma.Schema],
    id_parameter: str,
    create: Create[Any],
    list: Listing,
    get: Reading,
    delete: Delete[Any],
) -> None:
    """Register ``POST ""``, ``GET ""``, ``GET /<id_parameter>`` and ``DELETE /<id_parameter>``
    on ``blueprint``, each answering ``item`` (the list a page of them)."""
    one = f"/<{id_parameter}>"
    created_at = locations.at(f"{blueprint.name}.{get.endpoint}", **{id_parameter: "id"})
    register = blueprint.operation
    register("POST", "", body=create.body, created=item)(created_at(_creating(blueprint, create)))
    register("GET", "", page=item)(_listing(blueprint, list))
    register("GET", one, item=item)(_reading(blueprint, get, id_parameter))
    register("DELETE", one, item=item)(_deleting(blueprint, delete, id_parameter))


def _creating(blueprint: blueprints.Blueprint, create: Create[C]) -> Callable[..., Any]:
    """The create view: the use case's new item, from the body's command."""

    def view(body: dict[str, Any]) -> dict[str, Any]:
        return calls.item(create.use_case, create.command(body))

    return _named(view, blueprint, create.endpoint, create.doc)


def _listing(blueprint: blueprints.Blueprint, listing: Listing) -> Callable[..., Any]:
    """The list view: the page the query asks for."""

    def view(query: dict[str, Any]) -> dict[str, Any]:
        return calls.page(listing.use_case, query)

    return _named(view, blueprint, listing.endpoint, listing.doc)


def _reading(
    blueprint: blueprints.Blueprint, reading: Reading, id_parameter: str
) -> Callable[..., Any]:
    """The get view: the use case's answer for the id in the path."""

    def view(**path: str) -> dict[str, Any]:
        return calls.item(reading.use_case, path[id_parameter])

    return _named(view, blueprint, reading.endpoint, reading.doc)


def _deleting(
    blueprint: blueprints.Blueprint, delete: Delete[C], id_parameter: str
) -> Callable[..., Any]:
    """The delete view: the use case's answer to the command for the id in the path."""

    def view(**path: str) -> dict[str, Any]:
        return calls.item(delete.use_case, delete.command(path[id_parameter]))

    return _named(view, blueprint, delete.endpoint, delete.doc)


def _named(
    view: Callable[..., Any], blueprint: blueprints.Blueprint, endpoint: str, doc: str | None
) -> Callable[..., Any]:
    """The view under its endpoint's name, with its docstring, in the route module."""
    view.__name__ = view.__qualname__ = endpoint
    view.__doc__ = doc
    view.__module__ = blueprint.import_name
    return view
