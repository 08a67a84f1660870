"""The blueprint every route module uses, and ``operation``: a route's whole contract at once.

One decorator declares the method and rule, the body or query schema, the answer and the
permissions, so a view reads as its contract plus the call of its use case. The answer's kind
gives its status: ``item`` 200, ``created`` 201 and ``accepted`` 202 (each in the ``data``
envelope), ``page`` 200 (a list page; the view's query is ``limit`` and ``cursor``),
``answers`` 200 (a schema of its own), none of them 204. ``Location`` stays a decorator of
its own (``occ.web.locations``): it changes the answer, which ``operation`` only documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import marshmallow as ma

from occ.web import access, pagination, routing
from occ.web.schemas import common

View = TypeVar("View", bound=Callable[..., Any])

_ENVELOPED_STATUS: Final = {"item": 200, "created": 201, "accepted": 202}


class Blueprint(routing.Blueprint):
    """A route module's blueprint, named after the module; ``operation`` registers and
    documents one of its views, needing ``requires`` unless it names its own permissions."""

    def __init__(
        self,
        import_name: str,
        *,
        url_prefix: str,
        description: str,
        requires: str | tuple[str, ...] = (),
    ) -> None:
        name = import_name.rpartition(".")[2]
        super().__init__(name, import_name, url_prefix=url_prefix, description=description)
        self.requires = requires

    def operation(
        self,
        method: str,
        rule: str,
        *,
        requires: str | tuple[str, ...] = (),
        body: type[ma.Schema] | None = None,
        body_required: bool = True,
        query: type[ma.Schema] | None = None,
        item: type[ma.Schema] | None = None,
        created: type[ma.Schema] | None = None,
        accepted: type[ma.Schema] | None = None,
        page: type[ma.Schema] | None = None,
        named: bool = False,
        answers: type[ma.Schema] | None = None,
    ) -> Callable[[View], View]:
        """Route ``method rule`` to the view, which needs the permissions ``requires`` names
        (the blueprint's when it names none).

        ``body`` is the JSON body's schema (its ``EXAMPLE`` is the document's example),
        ``query`` the query's (unknown parameters are an
        error); at most one of ``item``, ``created``, ``accepted``, ``page`` and ``answers``
        says what a success answers; ``named`` lets a ``page`` be filtered by ``name``.
        """
        permissions = requires or self.requires
        permissions = (permissions,) if isinstance(permissions, str) else permissions
        if not permissions:
            raise TypeError(f"{rule!r}: an operation names the permissions it needs")
        inputs: list[tuple[type[ma.Schema], dict[str, Any]]] = []
        if body is not None:
            example = getattr(body, "EXAMPLE", None)
            if example is None:
                raise TypeError(f"{rule!r}: a request body's schema needs an EXAMPLE")
            inputs.append((body, {"required": body_required, "example": example}))
        if query is not None:
            inputs.append((query, {"location": "query", "unknown": ma.RAISE}))
        if page is not None:
            page_query = pagination.NamedPageQuery if named else pagination.PageQuery
            inputs.append((page_query, {"location": "query"}))
        success = _success(
            item=item, created=created, accepted=accepted, page=page, answers=answers
        )

        def declare(view: View) -> View:
            declared = self.response(*success)(access.requires(*permissions)(view))
            for schema, options in inputs:
                declared = self.arguments(schema, **options)(declared)
            return self.route(rule, methods=[method])(declared)

        return declare


def _success(**kinds: type[ma.Schema] | None) -> tuple[Any, ...]:
    """The status and schema of the one answer kind given (204 and no schema for none)."""
    given = {kind: schema for kind, schema in kinds.items() if schema is not None}
    if len(given) > 1:
        raise TypeError(f"an operation answers one kind, not {sorted(given)}")
    if not given:
        return (204,)
    [(kind, schema)] = given.items()
    if kind == "page":
        return (200, pagination.envelope(schema))
    if kind == "answers":
        return (200, schema)
    return (_ENVELOPED_STATUS[kind], common.envelope(schema))
