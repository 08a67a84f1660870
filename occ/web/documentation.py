"""What the conventions add to every operation's OpenAPI documentation.

An ``operationId`` (the view's name in camelCase), a summary, a description when the view's
docstring has none (the permissions it needs and the headers it honours), the 4xx answers
the conventions give it (400 for any query, 401/403/404 when authenticated, 409 and
``Idempotency-Key`` on POST, 409/412 and ``If-Match`` on PATCH and DELETE, 413/415 with a
body) and the ``Location`` / ``ETag`` response headers. It documents; it must not change
what a view does.
"""

from __future__ import annotations

import http
from types import ModuleType
from typing import Any, Final

from occ.web import access

_HEADER_STRING: Final = {"schema": {"type": "string"}}
_ETAG: Final = {
    "description": "A strong validator, for resources with a generation or updatedAt.",
    "schema": {"type": "string"},
}
IDEMPOTENCY_KEY: Final = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Repeat a POST safely: the same key and body replay the first answer.",
    "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"},
}
IF_MATCH: Final = {
    "name": "If-Match",
    "in": "header",
    "required": False,
    "description": "Change only if the resource's ETag is one of these (or ``*``).",
    "schema": {"type": "string"},
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _errors(*statuses: int) -> dict[int, str]:
    return {status: http.HTTPStatus(status).name for status in statuses}


def conventions(
    endpoint: str,
    method: str,
    info: dict[str, Any],
    *,
    public: bool,
    permissions: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The documentation the conventions add to one operation."""
    method = method.lower()
    with_body = any(
        parameter.get("in") == "json"
        for parameter in info.get("arguments", {}).get("parameters", [])
    )
    responses: dict[int, Any] = _errors(400)
    parameters: list[dict[str, Any]] = []
    if not public:
        responses.update(_errors(401, 403, 404))
    if with_body:
        responses.update(_errors(413, 415))
    if method == "post" and not public:
        responses.update(_errors(409))
        parameters.append(IDEMPOTENCY_KEY)
    if method in ("patch", "delete"):
        responses.update(_errors(409, 412))
        parameters.append(IF_MATCH)
    for status in info.get("response", {}).get("responses", {}):
        code = int(status)
        if code in (201, 202):
            responses[code] = {"headers": {"Location": _HEADER_STRING}}
        elif code == 200 and method == "get" and endpoint.startswith("get_"):
            responses[code] = {"headers": {"ETag": _ETAG}}
    doc: dict[str, Any] = {"operationId": _camel(endpoint), "responses": responses}
    if parameters:
        doc["parameters"] = parameters
    if not info.get("docstring", {}).get("summary"):
        doc["summary"] = endpoint.replace("_", " ").capitalize()
    if not info.get("docstring", {}).get("description"):
        doc["description"] = _description(method, public=public, permissions=permissions)
    return doc


def _description(method: str, *, public: bool, permissions: tuple[str, ...]) -> str:
    """What the conventions say of an operation the view's docstring does not describe: who
    may call it, and the headers it honours."""
    if public:
        return "Needs no credentials."
    needs = ", ".join(f"`{permission}`" for permission in permissions) or "a credential"
    text = (
        f"Needs {needs} (a bearer API key or a console session); a caller who may not read "
        "the resource gets 404, as if it did not exist."
    )
    if method == "post":
        text += " An `Idempotency-Key` makes a repeat answer as the first request did."
    if method in ("patch", "delete"):
        text += " `If-Match` makes it conditional on the resource's ETag."
    return text


def document(module: ModuleType) -> None:
    """Add the conventions to the documentation of a route module's blueprint (idempotent)."""
    for endpoint, methods in module.blueprint._docs.items():
        view = getattr(module, endpoint, None)
        declared = None if view is None else access.declared(view)
        public = declared == access.PUBLIC
        if declared is None:  # a view ``collections.declare`` made: the blueprint's permissions
            required = getattr(module.blueprint, "requires", ())
            declared = (required,) if isinstance(required, str) else tuple(required)
        permissions = () if public else tuple(declared)
        for method, info in methods.items():
            if method == "parameters":
                continue
            manual = info.setdefault("manual_doc", {})
            documented = conventions(endpoint, method, info, public=public, permissions=permissions)
            for key, value in documented.items():
                present = manual.setdefault(key, value)
                if key == "responses" and present is not value:
                    # the view's own documentation (keyed by "200" or 200) wins
                    for status, response in value.items():
                        if status not in present and str(status) not in present:
                            present[status] = response
