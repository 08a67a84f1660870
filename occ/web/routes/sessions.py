"""``/v1/sessions``: the caller's own user sessions (list, the current one with its CSRF
token) and revocation (one's own, or anyone's for an administrator)."""

from __future__ import annotations

import dataclasses
from typing import Any

from occ.controller import sign_in
from occ.foundation import errors
from occ.web import access, calls, cookies
from occ.web.routes import blueprints
from occ.web.schemas import common
from occ.web.schemas import sessions as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/sessions",
    description="User sessions started by signing in (the session cookie).",
    requires=access.AUTHENTICATED,
)


@blueprint.operation("GET", "", answers=common.envelope(schemas.UserSession, many=True))
def list_sessions() -> dict[str, Any]:
    """The caller's own sessions, ended ones included, oldest first."""
    return common.wrap(calls.call(sign_in.list_sessions))


@blueprint.operation("GET", "/current", item=schemas.CurrentSession)
def current_session() -> dict[str, Any]:
    """The session this request's cookie carries, with its CSRF token (404 for an API key)."""
    session_id = access.session_id()
    if session_id is None:
        raise errors.NotFound("this request carries no session cookie")
    found = calls.call(sign_in.current_session, session_id)
    secret = calls.context().runtime.settings.auth_secret
    assert secret is not None  # a cookie authenticated the request
    token = cookies.csrf_token(secret, session_id)
    return common.wrap({**dataclasses.asdict(found), "csrf_token": token})


@blueprint.operation("DELETE", "/<session_id>", item=schemas.UserSession)
def revoke_session(session_id: str) -> dict[str, Any]:
    """End a session at once: the next request with its cookie is refused (401)."""
    return calls.item(sign_in.revoke_session, sign_in.RevokeSession(session_id=session_id))
