"""User sign-in: identities linking an issuer's subject to a principal, and server-side user
sessions.

``principal_identities`` links one (issuer, subject) pair, as the identity provider names a
person, to one human principal: never an e-mail address, which a provider may reassign. A
principal may have several identities; a pair belongs to one principal.

``user_sessions`` holds a session per sign-in: only an HMAC of its token (keyed with
``OCC_AUTH_SECRET``), when it ends for good (``expires_at``, the absolute timeout), when it was
last used (the idle timeout counts from it) and when it was revoked.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0017"
down_revision = "0016"

_UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

UPGRADE = rf"""
CREATE TABLE occ.principal_identities (
  issuer text NOT NULL,
  subject text NOT NULL,
  principal_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT principal_identities_pkey PRIMARY KEY (issuer, subject),
  CONSTRAINT principal_identities_principal_id_fkey
    FOREIGN KEY (principal_id) REFERENCES occ.principals (id),
  CONSTRAINT principal_identities_issuer_length CHECK (length(issuer) BETWEEN 1 AND 2048),
  CONSTRAINT principal_identities_subject_length CHECK (length(subject) BETWEEN 1 AND 255)
);
CREATE INDEX principal_identities_principal ON occ.principal_identities (principal_id);

CREATE TABLE occ.user_sessions (
  id text NOT NULL,
  principal_id text NOT NULL,
  issuer text NOT NULL,
  token_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_seen_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  CONSTRAINT user_sessions_pkey PRIMARY KEY (id),
  CONSTRAINT user_sessions_principal_id_fkey
    FOREIGN KEY (principal_id) REFERENCES occ.principals (id),
  CONSTRAINT user_sessions_id_format CHECK (id ~ '^ses_{_UUID4}$'),
  CONSTRAINT user_sessions_token_hash_format CHECK (token_hash ~ '^[0-9a-f]{{64}}$'),
  CONSTRAINT user_sessions_expiry CHECK (expires_at > created_at)
);
CREATE INDEX user_sessions_principal_created
  ON occ.user_sessions (principal_id, created_at, id);
"""

DOWNGRADE = r"""
DROP TABLE occ.user_sessions;
DROP TABLE occ.principal_identities;
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(
        "GRANT SELECT, INSERT ON occ.principal_identities, occ.user_sessions TO occ_app; "
        "GRANT UPDATE (last_seen_at, revoked_at) ON occ.user_sessions TO occ_app"
    )


def downgrade() -> None:
    steps.execute(DOWNGRADE)
