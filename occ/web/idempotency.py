"""``Idempotency-Key`` on every POST: a repeat replays the first successful answer.

The key is scoped to the caller and the request path. Before the view runs, a repeat is
answered from the key's record: with the same body (compared by an HMAC-SHA-256 fingerprint
of the canonical JSON body, keyed with the secret key, so a low-entropy body such as a
Secret's value cannot be guessed from it) the stored status, body and ``Location``
(``Idempotent-Replayed: true``), with another body 409 ``IDEMPOTENCY_KEY_REUSED``. A first
request holds its key while the view runs: the use case's own transaction writes the record
with the change (``occ.controller.idempotency``), so a crash can never leave the change
without the record, a failed request leaves no record, and of two concurrent requests with
the key only one applies (the other answers 409 ``IDEMPOTENCY_KEY_IN_USE``, like a repeat
while the first answer is still being stored). The answer is stored right after the commit;
if the request died in between, a repeat answers 409 ``IDEMPOTENCY_KEY_REUSED`` once the
record is a minute old, and the change is never applied again. Answers that carry a secret
(a new API key) are never stored: their repeat answers 409 ``IDEMPOTENCY_KEY_REUSED``. A POST
that changes nothing (only reads) keeps no record. This module must not store a secret:
neither a request body (only its keyed digest) nor such an answer.

A repeat is authenticated like any request (a revoked key answers 401) and, before its record
is read out, re-authorized (``occ.controller.replays``): the route's own permission on the
resource its path names, under current policy, so a caller whose role binding was revoked since
gets 403, not the stored success. Keys are scoped to the principal: another principal's
request with the same key is a request of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from typing import Any, Final

import flask

from occ.controller import idempotency, replays
from occ.foundation import errors
from occ.telemetry import observability
from occ.web import access, json_input, problems

HEADER: Final = "Idempotency-Key"
_KEY: Final = re.compile(r"[\x21-\x7e]{1,255}")
_SCOPE: Final = "occ_idempotency_scope"
SECRET_BEARING_ENDPOINTS: Final = frozenset({"principals.create_api_key"})
"""Routes whose answer holds a secret shown once: the answer is not kept for a replay."""


def fingerprint(secret: str, body: Any) -> str:
    """The keyed digest of a body's canonical JSON (sorted keys, no spaces, UTF-8)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(secret.encode(), canonical.encode(), hashlib.sha256).hexdigest()


def claim_or_replay() -> flask.Response | None:
    """``before_request``: replay the key's answer, refuse with a 409, or hold the key."""
    idempotency.hold(None)
    presented = flask.request.headers.get(HEADER)
    principal_id = flask.g.get("principal_id")
    if flask.request.method != "POST" or presented is None or principal_id is None:
        return None
    if not _KEY.fullmatch(presented):
        raise problems.InvalidRequest.at(
            ("headers", HEADER), "must be 1 to 255 visible ASCII characters"
        )
    try:
        body = json_input.load(flask.request)
    except errors.InvalidInput:
        return None  # the view refuses the body; a refusal changes nothing, nothing to keep
    context = flask.current_app.extensions["occ"]
    scope = idempotency.Scope(
        principal_id=str(principal_id), route=f"POST {flask.request.path}", key=presented
    )
    digest = fingerprint(context.runtime.settings.secret_key, body)
    record = idempotency.find(context.runtime.database, scope)
    if record is None:
        reservation = idempotency.Reservation(scope=scope, fingerprint=digest)
        flask.g.setdefault(_SCOPE, reservation)
        idempotency.hold(reservation)
        return None
    replays.reauthorize(context.runtime.database, str(principal_id), _replay())
    if record.fingerprint != digest or (
        record.response_status is not None and flask.request.endpoint in SECRET_BEARING_ENDPOINTS
    ):
        raise problems.IdempotencyKeyReused(
            "the Idempotency-Key was already used for another request (or for one whose "
            "answer is shown only once)"
        )
    if record.abandoned:
        raise problems.IdempotencyKeyReused(
            "the request with this Idempotency-Key was applied but its answer was lost; "
            "read the resource instead of repeating it"
        )
    if record.response_status is None:
        raise problems.IdempotencyKeyInUse()
    replay = flask.jsonify(record.response_body)
    replay.status_code = record.response_status
    replay.headers["Idempotent-Replayed"] = "true"
    if record.response_location is not None:
        replay.headers["Location"] = record.response_location
    return replay


def _replay() -> replays.Replay:
    """The route's own permission (the first it declares) and the ids its path names."""
    view = flask.current_app.view_functions[flask.request.endpoint or ""]
    declared = access.declared(view)
    assert declared, "a route that takes an Idempotency-Key declares its permissions"
    permission = declared[0]
    arguments = flask.request.view_args or {}
    kind = permission.partition(":")[0]
    return replays.Replay(
        permission=permission,
        namespace_id=arguments.get("namespace_id"),
        item_id=arguments.get(f"{kind}_id"),
    )


def record_outcome(response: flask.Response) -> flask.Response:
    """``after_request``: keep the answer of a request whose change committed with its key."""
    idempotency.hold(None)
    reservation = flask.g.pop(_SCOPE, None)
    if reservation is None or not reservation.applied or not 200 <= response.status_code < 300:
        # nothing applied, nothing to keep; an applied request that failed afterwards keeps
        # its record unanswered: its repeat must not apply again
        return response
    secret_bearing = flask.request.endpoint in SECRET_BEARING_ENDPOINTS
    try:
        idempotency.record_answer(
            flask.current_app.extensions["occ"].runtime.database,
            reservation,
            status=response.status_code,
            # a repeat of a secret-bearing request is refused, never replayed
            body={} if secret_bearing else response.get_json(silent=True),
            location=response.headers.get("Location"),
        )
    except errors.OccError as error:
        # the change is done: the answer stands; a repeat is refused, never applied again
        observability.log(
            "http.idempotency_unrecorded",
            level=logging.WARNING,
            requestId=flask.g.get("request_id"),
            error=type(error).__name__,
        )
    return response
