"""Every error answered as ``application/problem+json``, mapped once from the error tree.

``status``, ``title``, ``detail``, a stable ``code``, the ``requestId`` and, for invalid input,
``errors[]`` with JSON-Pointer paths. Unexpected exceptions answer 500 without details.

A use case names an invalid field by its path in snake_case domain terms
(``("harness_auth", "secret_id")``); this mapping answers it as a JSON Pointer into the request
in the API's camelCase (``/harnessAuth/secretId``). What the web layer refuses on its own
(``InvalidRequest``: the body's JSON and schema, the query, a header) already names the
request's own keys and is answered as it is.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import flask
from werkzeug import exceptions as http

from occ.foundation import errors
from occ.telemetry import observability

CONTENT_TYPE: Final = "application/problem+json"
RETRY_AFTER_S: Final = 5  # what a 503 asks the client to wait before it tries again


PreconditionFailed = errors.PreconditionFailed
IdempotencyKeyInUse = errors.IdempotencyKeyInUse


class IdempotencyKeyReused(errors.Conflict):
    """The ``Idempotency-Key`` was already used for another request."""

    code = "IDEMPOTENCY_KEY_REUSED"


_STATUS: Final[dict[type[errors.OccError], int]] = {
    errors.InvalidInput: 400,
    errors.Unauthenticated: 401,
    errors.RateLimited: 429,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    PreconditionFailed: 412,
    errors.ClaimLost: 409,
    errors.UnknownOutcome: 503,
    errors.DependencyUnavailable: 503,
}

_HTTP_CODES: Final = {
    400: "INVALID_REQUEST",
    401: "UNAUTHENTICATED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "RESOURCE_CONFLICT",
    412: "PRECONDITION_FAILED",
    413: "PAYLOAD_TOO_LARGE",
    414: "URI_TOO_LONG",
    415: "UNSUPPORTED_MEDIA_TYPE",
    431: "REQUEST_HEADER_FIELDS_TOO_LARGE",
    503: "DEPENDENCY_UNAVAILABLE",
}

_TITLES: Final = {
    400: "Invalid request",
    401: "Unauthenticated",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    408: "Request timeout",
    409: "Conflict",
    413: "Payload too large",
    414: "URI too long",
    412: "Precondition failed",
    415: "Unsupported media type",
    417: "Expectation failed",
    431: "Request header fields too large",
    500: "Internal error",
    501: "Not implemented",
    503: "Service unavailable",
}


class InvalidRequest(errors.InvalidInput):
    """The request is not valid.

    Raised by the web layer itself: its paths are the request's own keys, spelled as sent.
    """


def wire_name(name: str) -> str:
    """A snake_case domain name as the API spells it (``secret_id`` -> ``secretId``)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def pointer(error: errors.InvalidInput, field: errors.FieldError) -> str:
    """Where ``field`` of ``error`` is, as a JSON Pointer into the request."""
    if isinstance(error, InvalidRequest | errors.InvalidSettings):
        return field.pointer
    return errors.json_pointer(
        wire_name(token) if isinstance(token, str) else token for token in field.path
    )


class UnsupportedMediaType(errors.InvalidInput):
    """The request body must be JSON (application/json)."""

    code = "UNSUPPORTED_MEDIA_TYPE"


# what the gunicorn worker answers before the app sees a request (``occ.web.serving``)
_REFUSAL_CODES: Final = (
    "MALFORMED_REQUEST",
    "URI_TOO_LONG",
    "REQUEST_HEADER_FIELDS_TOO_LARGE",
    "EXPECTATION_FAILED",
    "UNSUPPORTED_TRANSFER_CODING",
    "REQUEST_TIMEOUT",
)


def known_codes() -> list[str]:
    """Every ``code`` a problem can carry (the OpenAPI enum), from the error tree as loaded."""
    found = {"INTERNAL_ERROR", *_HTTP_CODES.values(), *_REFUSAL_CODES}
    pending: list[type[errors.OccError]] = [errors.OccError]
    while pending:
        kind = pending.pop()
        found.add(kind.code)
        pending.extend(kind.__subclasses__())
    return sorted(found)


def known_statuses() -> list[int]:
    """Every ``status`` a problem can carry (the OpenAPI enum)."""
    return sorted({*_TITLES, *_HTTP_CODES, *_STATUS.values()})


def status_of(error: errors.OccError) -> int:
    for kind in type(error).__mro__:
        if kind in _STATUS:
            return _STATUS[kind]
    return 500


def document(status: int, code: str, detail: str, request_id: str | None) -> dict[str, Any]:
    """The problem+json body every error answers with (also written by ``occ.web.serving``)."""
    return {
        "type": "about:blank",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
        "requestId": request_id,
    }


def problem(
    status: int,
    code: str,
    detail: str,
    field_errors: list[dict[str, str]] | None = None,
    extensions: dict[str, Any] | None = None,
) -> flask.Response:
    body = document(status, code, detail, flask.g.get("request_id"))
    if field_errors is not None:
        body["errors"] = field_errors
    body.update(extensions or {})
    response = flask.jsonify(body)
    response.status_code = status
    response.content_type = CONTENT_TYPE
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="occ"'
    if status in (429, 503):
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def _occ_error(error: errors.OccError) -> flask.Response:
    status = 415 if isinstance(error, UnsupportedMediaType) else status_of(error)
    field_errors = None
    if isinstance(error, errors.InvalidInput):
        field_errors = [{"pointer": pointer(error, e), "message": e.message} for e in error.errors]
    if status == 500:
        return _unexpected(error)
    extensions = None
    if isinstance(error, errors.QuotaExceeded):
        extensions = {"quota": {"name": error.quota, "limit": error.limit, "used": error.usage}}
    response = problem(status, error.code, error.detail, field_errors, extensions)
    if isinstance(error, errors.RateLimited):
        response.headers["Retry-After"] = str(error.retry_after_s)
        response.headers["RateLimit-Limit"] = str(error.limit)
        response.headers["RateLimit-Remaining"] = str(error.remaining)
        response.headers["RateLimit-Reset"] = str(error.retry_after_s)
    return response


def _http_error(error: http.HTTPException) -> flask.Response:
    status = error.code or 500
    if status >= 500:
        return _unexpected(error)
    code = _HTTP_CODES.get(status, "INVALID_REQUEST")
    detail = {
        404: "the resource does not exist",
        405: "the method is not allowed on this resource",
        413: "the request body is too large",
    }.get(status, error.description or _TITLES.get(status, "Error"))
    response = problem(status, code, detail)
    if status == 405 and isinstance(error, http.MethodNotAllowed) and error.valid_methods:
        response.headers["Allow"] = ", ".join(sorted(error.valid_methods))
    return response


def _unexpected(error: BaseException) -> flask.Response:
    observability.log(
        "http.error",
        level=logging.ERROR,
        requestId=flask.g.get("request_id"),
        error=type(error).__name__,
        path=flask.request.path,
    )
    flask.current_app.logger.exception("unexpected error", exc_info=error)
    return problem(500, "INTERNAL_ERROR", "an unexpected error occurred")


def register(app: flask.Flask) -> None:
    """Install the handlers on ``app``."""
    app.register_error_handler(errors.OccError, _occ_error)
    app.register_error_handler(http.HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)
