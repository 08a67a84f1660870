"""The app role may read the migration revision (``occ.alembic_version``): the API and the
workers wait at start-up until the database is at their code's revision.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_IF_APP_ROLE = (
    "DO $grants$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'occ_app') THEN "
    "EXECUTE $sql${statement}$sql$; END IF; END $grants$"
)


def upgrade() -> None:
    op.execute(_IF_APP_ROLE.format(statement="GRANT SELECT ON occ.alembic_version TO occ_app"))


def downgrade() -> None:
    op.execute(_IF_APP_ROLE.format(statement="REVOKE SELECT ON occ.alembic_version FROM occ_app"))
