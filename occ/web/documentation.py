"""What the conventions add to every operation's OpenAPI documentation.

An ``operationId`` (the view's name in camelCase), a summary, the 4xx answers the conventions
give it (400 for any query, 401/403/404 when authenticated, 409 and ``Idempotency-Key`` on
POST, 409/412 and ``If-Match`` on PATCH and DELETE, 413/415 with a body) and the
``Location`` / ``ETag`` response headers. It documents; it must not change what a view does.
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
    endpoint: str, method: str, info: dict[str, Any], *, public: bool
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
    return doc


def document(module: ModuleType) -> None:
    """Add the conventions to the documentation of a route module's blueprint (idempotent)."""
    for endpoint, methods in module.blueprint._docs.items():
        view = getattr(module, endpoint, None)
        public = view is not None and access.declared(view) == access.PUBLIC
        for method, info in methods.items():
            if method == "parameters":
                continue
            manual = info.setdefault("manual_doc", {})
            for key, value in conventions(endpoint, method, info, public=public).items():
                present = manual.setdefault(key, value)
                if key == "responses" and present is not value:
                    # the view's own documentation (keyed by "200" or 200) wins
                    for status, response in value.items():
                        if status not in present and str(status) not in present:
                            present[status] = response
