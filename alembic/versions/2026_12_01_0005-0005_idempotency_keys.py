"""Idempotency records: the first answer to a POST sent with an ``Idempotency-Key``.

One row per (principal, route, key): a SHA-256 HMAC of the canonical request body, and once
the request succeeded its status, body and ``Location``. A row without a status is a request
still running (or one that died; it may be taken over after a while). Rows older than 24
hours are no longer honoured; nothing sweeps them yet.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0005"
down_revision = "0004"

TABLE = r"""
CREATE TABLE occ.idempotency_keys (
  principal_id text NOT NULL,
  route text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  response_status integer,
  response_body jsonb,
  response_location text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT idempotency_keys_pkey PRIMARY KEY (principal_id, route, key),
  CONSTRAINT idempotency_keys_key_format CHECK (key ~ '^[\x21-\x7e]{1,255}$'),
  CONSTRAINT idempotency_keys_fingerprint_format CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  CONSTRAINT idempotency_keys_response_complete CHECK (
    (response_status IS NULL) = (response_body IS NULL)
    AND (response_status IS NULL OR response_status BETWEEN 200 AND 299)
  )
);
CREATE INDEX idempotency_keys_created_at ON occ.idempotency_keys (created_at);
"""

GRANTS = r"""
GRANT SELECT, INSERT, DELETE ON occ.idempotency_keys TO occ_app;
GRANT UPDATE (fingerprint, response_status, response_body, response_location, created_at)
  ON occ.idempotency_keys TO occ_app;
"""


def upgrade() -> None:
    steps.execute(TABLE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute("DROP TABLE occ.idempotency_keys")
