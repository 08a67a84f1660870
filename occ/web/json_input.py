"""Strict JSON request bodies and the webargs parser that uses them.

Only ``application/json`` (an empty body counts as ``{}``); UTF-8; an object at the top;
no duplicate keys, NaN/Infinity, lone surrogates or NUL characters; bounded nesting depth.
Schema errors become ``problems.InvalidRequest`` naming the body's keys, once the app's
``BODY_ERROR_CHECK`` (if any) had its say about the path's resources.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final, NoReturn

import flask
import marshmallow
from webargs import flaskparser

from occ.foundation import errors
from occ.web import problems

MAX_DEPTH: Final = 32
BODY_ERROR_CHECK: Final = "occ.body_error_check"  # app.extensions key: runs before a body error


class _Rejected(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _Rejected(f"duplicate key {key!r}")
        result[key] = value
    return result


def _constant(name: str) -> NoReturn:
    raise _Rejected(f"{name} is not valid JSON")


MAX_INTEGER_DIGITS: Final = 1000


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Rejected("numbers must be finite")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _Rejected(f"integers must have at most {MAX_INTEGER_DIGITS} digits")
    return int(text)


_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float, parse_int=_int
)
"""The strict decoder, built once (``json.loads`` with hooks builds one per call)."""


def _check(value: Any, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise _Rejected(f"nesting deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        _check_text(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise _Rejected("strings must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _Rejected("strings must not contain lone surrogates") from None


def load(request: flask.Request) -> dict[str, Any]:
    """The request body as a JSON object, or ``InvalidRequest`` / 415."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        return {}
    if not request.is_json:
        raise problems.UnsupportedMediaType("the request body must be application/json")
    try:
        text = raw.decode("utf-8")
        document = _DECODER.decode(text)
        _check(document)
    except UnicodeDecodeError:
        raise problems.InvalidRequest.at((), "the body is not valid UTF-8") from None
    except _Rejected as rejected:
        raise problems.InvalidRequest.at((), str(rejected)) from None
    except json.JSONDecodeError as exc:
        raise problems.InvalidRequest.at((), f"the body is not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise problems.InvalidRequest.at((), f"nesting deeper than {MAX_DEPTH} levels") from None
    if not isinstance(document, dict):
        raise problems.InvalidRequest.at((), "the body must be a JSON object")
    return document


def field_errors(messages: Any, prefix: errors.Path = ()) -> list[errors.FieldError]:
    """Field errors from marshmallow's nested messages, at the body's own keys."""
    if isinstance(messages, Mapping):
        found: list[errors.FieldError] = []
        for key, value in messages.items():
            if key == "_schema":
                found.extend(field_errors(value, prefix))
                continue
            found.extend(field_errors(value, (*prefix, str(key))))
        return found
    if isinstance(messages, list | tuple) and all(isinstance(m, str) for m in messages):
        return [errors.FieldError(prefix, message) for message in messages]
    if isinstance(messages, list | tuple):
        return [e for item in messages for e in field_errors(item, prefix)]
    return [errors.FieldError(prefix, str(messages))]


class Parser(flaskparser.FlaskParser):
    """webargs with occ's strict JSON and problem+json validation errors."""

    DEFAULT_VALIDATION_STATUS = 400

    def _raw_load_json(self, req: flask.Request) -> Any:
        try:
            return load(req)
        except errors.InvalidInput:
            _before_body_error(req)
            raise

    def handle_error(
        self,
        error: marshmallow.ValidationError,
        req: flask.Request,
        schema: marshmallow.Schema,
        *,
        error_status_code: int | None,
        error_headers: Mapping[str, str] | None,
    ) -> NoReturn:
        _before_body_error(req)
        messages = error.messages
        # webargs files one schema's messages under its location: a body field's pointer
        # starts at the body (``/name``), a query parameter's under ``/query`` (as an unknown
        # one's does)
        if isinstance(messages, Mapping) and len(messages) == 1:
            [(location, fields)] = messages.items()
            if location in ("json", "path"):
                messages = fields
            elif location == "query":
                messages = {"query": fields}
        raise problems.InvalidRequest("the request is invalid", field_errors(messages))


def _before_body_error(request: flask.Request) -> None:
    """Run the app's check that may answer something else than the body error (``NotFound``
    for a Namespace the caller may not see: the path's resources come before the body)."""
    check = flask.current_app.extensions.get(BODY_ERROR_CHECK)
    if check is not None:
        check(request)


parser: Final = Parser()
