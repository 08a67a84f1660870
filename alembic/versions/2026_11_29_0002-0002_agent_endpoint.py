"""Agents remember the endpoint their active revision serves on.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE occ.agents ADD COLUMN endpoint text")
    op.execute(
        "ALTER TABLE occ.agents ADD CONSTRAINT agents_endpoint_requires_active_revision "
        "CHECK (endpoint IS NULL OR active_revision_id IS NOT NULL)"
    )
    op.execute(
        "DO $grant$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'occ_app') THEN "
        "GRANT UPDATE (endpoint) ON occ.agents TO occ_app; END IF; END $grant$"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE occ.agents DROP COLUMN endpoint")
