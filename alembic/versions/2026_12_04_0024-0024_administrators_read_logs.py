"""The built-in administrator Roles may read Agents' runtime logs: ``agent:read_logs`` joins the
live Installation Roles occ made for its administrators ("Installation administrator", and the
one break-glass recovery makes when that name is taken), sorted in like ``create_role`` keeps
them. No other Role changes; the ``agent-runtime`` Role never gets it. The downgrade takes it
out of those Roles again.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0024"
down_revision = "0023"

_ROLES = """
 WHERE namespace_id IS NULL AND deleted_at IS NULL
   AND name IN ('Installation administrator', 'Installation administrator (recovered)')
"""

UPGRADE = f"""
UPDATE occ.roles
   SET permissions = ARRAY(
         SELECT DISTINCT permission COLLATE "C"
           FROM unnest(permissions || ARRAY['agent:read_logs']) AS permission
          ORDER BY 1)
{_ROLES}
   AND NOT ('agent:read_logs' = ANY (permissions));
"""

DOWNGRADE = f"""
UPDATE occ.roles SET permissions = array_remove(permissions, 'agent:read_logs')
{_ROLES}
   AND 'agent:read_logs' = ANY (permissions);
"""


def upgrade() -> None:
    steps.execute(UPGRADE)


def downgrade() -> None:
    steps.execute(DOWNGRADE)
