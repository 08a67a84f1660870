"""``Idempotency-Key`` on every POST: a repeat replays the first successful answer.

The key is scoped to the caller and the request path. Before the view runs, the key is
claimed with an HMAC-SHA-256 fingerprint of the canonical JSON body (keyed with the secret
key, so a low-entropy body such as a Secret's value cannot be guessed from it); a repeat with
the same body gets the stored status, body and ``Location`` (``Idempotent-Replayed: true``),
with another body 409 ``IDEMPOTENCY_KEY_REUSED``, while the first is still running 409
``IDEMPOTENCY_KEY_IN_USE``. The answer is stored right after the view's own transaction
committed; a failed request gives the key back. Answers that carry a secret (a new API
key) are never stored: their repeat answers 409 ``IDEMPOTENCY_KEY_REUSED``. This module must
not store a secret: neither a request body (only its keyed digest) nor such an answer.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from typing import Any, Final

import flask

from occ import errors, observability
from occ.state import idempotency
from occ.web import json_input, problems

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
    """``before_request``: claim the key, or answer the stored response / a 409."""
    presented = flask.request.headers.get(HEADER)
    principal_id = flask.g.get("principal_id")
    if flask.request.method != "POST" or presented is None or principal_id is None:
        return None
    if not _KEY.fullmatch(presented):
        raise errors.InvalidInput.at(
            f"/headers/{HEADER}", "must be 1 to 255 visible ASCII characters"
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
    with context.runtime.database.transaction() as session:
        record = idempotency.claim(session, scope, digest)
    if record is None:
        flask.g.setdefault(_SCOPE, scope)
        return None
    if record.fingerprint != digest or (
        record.response_status is not None and flask.request.endpoint in SECRET_BEARING_ENDPOINTS
    ):
        raise problems.IdempotencyKeyReused(
            "the Idempotency-Key was already used for another request (or for one whose "
            "answer is shown only once)"
        )
    if record.response_status is None:
        raise problems.IdempotencyKeyInUse()
    replay = flask.jsonify(record.response_body)
    replay.status_code = record.response_status
    replay.headers["Idempotent-Replayed"] = "true"
    if record.response_location is not None:
        replay.headers["Location"] = record.response_location
    return replay


def record_outcome(response: flask.Response) -> flask.Response:
    """``after_request``: keep a success for replays, give the key back after a failure."""
    scope = flask.g.pop(_SCOPE, None)
    if scope is None:
        return response
    database = flask.current_app.extensions["occ"].runtime.database
    succeeded = 200 <= response.status_code < 300
    try:
        with database.transaction() as session:
            if succeeded:
                secret_bearing = flask.request.endpoint in SECRET_BEARING_ENDPOINTS
                idempotency.complete(
                    session,
                    scope,
                    status=response.status_code,
                    # a repeat of a secret-bearing request is refused, never replayed
                    body={} if secret_bearing else response.get_json(silent=True),
                    location=response.headers.get("Location"),
                )
            else:
                idempotency.release(session, scope)
    except errors.OccError as error:
        # the change itself is done (or refused): the answer stands; the claim is abandoned
        # and may be taken over once it is old enough
        observability.log(
            "http.idempotency_unrecorded",
            level=logging.WARNING,
            requestId=flask.g.get("request_id"),
            error=type(error).__name__,
        )
    return response
