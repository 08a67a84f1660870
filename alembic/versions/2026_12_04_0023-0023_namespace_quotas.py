"""Per-Namespace quota overrides: ``namespace_quotas`` holds an administrator's limits of one
Namespace (Agents, revisions per Agent, Secrets, Configurations); a ``NULL`` limit, or no row,
is the installation's default (``OCC_QUOTA_*``). The application role may read, insert and
update them, never delete.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0023"
down_revision = "0022"

UPGRADE = r"""
CREATE TABLE occ.namespace_quotas (
  namespace_id text NOT NULL,
  agents integer,
  revisions_per_agent integer,
  secrets integer,
  configurations integer,
  updated_by text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CONSTRAINT namespace_quotas_pkey PRIMARY KEY (namespace_id),
  CONSTRAINT namespace_quotas_namespace_id_fkey
    FOREIGN KEY (namespace_id) REFERENCES occ.namespaces (id),
  CONSTRAINT namespace_quotas_not_negative CHECK (
    agents >= 0 AND revisions_per_agent >= 0 AND secrets >= 0 AND configurations >= 0)
);
"""


def upgrade() -> None:
    steps.execute(UPGRADE)
    steps.grant_to_app_role(
        "GRANT SELECT, INSERT ON occ.namespace_quotas TO occ_app; "
        "GRANT UPDATE (agents, revisions_per_agent, secrets, configurations, updated_by,"
        " updated_at) ON occ.namespace_quotas TO occ_app"
    )


def downgrade() -> None:
    steps.execute("DROP TABLE occ.namespace_quotas")
