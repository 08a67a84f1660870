"""User-session representations: a session's metadata, and the current one with its CSRF
token (never the session's token, which only the cookie carries)."""

from __future__ import annotations

from marshmallow import fields

from occ.web.schemas import common


class UserSession(common.Stored):
    principal_id = fields.String(data_key="principalId", required=True)
    issuer = fields.String(required=True)
    last_seen_at = fields.DateTime(data_key="lastSeenAt", required=True)
    expires_at = fields.DateTime(data_key="expiresAt", required=True)
    revoked_at = fields.DateTime(data_key="revokedAt", allow_none=True)


class CurrentSession(UserSession):
    """The session the request's cookie carries, with the CSRF token its unsafe requests send
    in ``X-CSRF-Token``."""

    csrf_token = fields.String(data_key="csrfToken", required=True)
