"""An Agent's harness authentication may name a managed account; a revision pins it exactly.

* ``agents.harness_auth_account_id``: the draft's managed account (in the Agent's Namespace),
  at most one of it and ``harness_auth_secret_id``.
* ``agent_revisions_harness_auth_shape`` admits, beside ``{kind: secret, secretId}``, the
  managed-account pin: ``{kind: managedAccount, accountId, tokenReference, backendId, driver,
  workspace}``, the account, the exact access-token reference the deploy resolved and the
  Backend binding it verified. Never a token value.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0022"
down_revision = "0021"

UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

SECRET_SHAPE = rf"""
    jsonb_typeof(harness_auth) = 'object'
    AND harness_auth ->> 'kind' = 'secret'
    AND (harness_auth ->> 'secretId') ~ '^sec_{UUID4}$'
    AND harness_auth - 'kind' - 'secretId' = '{{}}'::jsonb"""

ACCOUNT_SHAPE = rf"""
    jsonb_typeof(harness_auth) = 'object'
    AND harness_auth ->> 'kind' = 'managedAccount'
    AND (harness_auth ->> 'accountId') ~ '^acc_{UUID4}$'
    AND jsonb_typeof(harness_auth -> 'tokenReference') = 'string'
    AND (harness_auth ->> 'tokenReference') ~ '^[!-~]+$'
    AND char_length(harness_auth ->> 'tokenReference') <= 256
    AND (harness_auth ->> 'backendId') ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{{0,127}}$'
    AND (harness_auth ->> 'driver') ~ '^[a-z][a-z0-9-]{{0,31}}$'
    AND (harness_auth ->> 'workspace') ~ '^[A-Za-z0-9][A-Za-z0-9._-]{{0,127}}$'
    AND harness_auth - 'kind' - 'accountId' - 'tokenReference' - 'backendId' - 'driver'
        - 'workspace' = '{{}}'::jsonb"""

UPGRADE = rf"""
ALTER TABLE occ.agents ADD COLUMN harness_auth_account_id text,
  ADD CONSTRAINT agents_harness_auth_account_fkey FOREIGN KEY (namespace_id, harness_auth_account_id)
    REFERENCES occ.accounts (namespace_id, id),
  ADD CONSTRAINT agents_harness_auth_one_source
    CHECK (num_nonnulls(harness_auth_secret_id, harness_auth_account_id) <= 1);
CREATE INDEX agents_harness_auth_account ON occ.agents (harness_auth_account_id)
  WHERE harness_auth_account_id IS NOT NULL;
ALTER TABLE occ.agent_revisions DROP CONSTRAINT agent_revisions_harness_auth_shape,
  ADD CONSTRAINT agent_revisions_harness_auth_shape CHECK (({SECRET_SHAPE}) OR ({ACCOUNT_SHAPE}));
"""

GRANTS = "GRANT UPDATE (harness_auth_account_id) ON occ.agents TO occ_app;"

DOWNGRADE = rf"""
ALTER TABLE occ.agent_revisions DROP CONSTRAINT agent_revisions_harness_auth_shape,
  ADD CONSTRAINT agent_revisions_harness_auth_shape CHECK ({SECRET_SHAPE});
DROP INDEX occ.agents_harness_auth_account;
ALTER TABLE occ.agents DROP COLUMN harness_auth_account_id;
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(GRANTS)


def downgrade() -> None:
    steps.execute(DOWNGRADE)
