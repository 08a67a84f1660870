"""The app role may read the migration revision (``occ.alembic_version``): the API and the
workers wait at start-up until the database is at their code's revision.
"""

from __future__ import annotations

from occ.state import schema_steps as steps

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    steps.grant_to_app_role("GRANT SELECT ON occ.alembic_version TO occ_app")


def downgrade() -> None:
    steps.grant_to_app_role("REVOKE SELECT ON occ.alembic_version FROM occ_app")
