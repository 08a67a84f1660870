"""The ready index covers what a claim's window reads (lane, attempt count): the window is an
index-only scan, so a claim touches as many pages over a deep backlog as over a shallow one.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"


def upgrade() -> None:
    op.execute("DROP INDEX occ.controller_work_ready")
    op.execute(
        "CREATE INDEX controller_work_ready ON occ.controller_work (available_at, created_at, id)"
        " INCLUDE (lane, attempt_count) WHERE state = 'queued'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX occ.controller_work_ready")
    op.execute(
        "CREATE INDEX controller_work_ready ON occ.controller_work (available_at, created_at, id)"
        " WHERE state = 'queued'"
    )
