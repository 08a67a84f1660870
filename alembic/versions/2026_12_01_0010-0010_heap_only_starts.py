"""A running claim's start and lease renewals are heap-only (HOT) updates.

PostgreSQL updates a row without touching any index when no indexed column changes and the
new version fits on the same page. ``controller_work_expired`` indexed ``lease_expires_at``,
so every start and every renewal (each sets the lease) wrote a new entry into all six indexes
of the table. Recovery finds expired claims among the claimed rows, at most the fleet's
in-flight budget: it reads them through ``controller_work_one_claim_per_lane`` (the partial
index of claimed rows) and sorts that handful by lease. The table keeps a fifth of each page
free (fillfactor 80) so that the new version of a claimed row finds room beside the old one.
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"


def upgrade() -> None:
    op.execute("DROP INDEX occ.controller_work_expired")
    op.execute("ALTER TABLE occ.controller_work SET (fillfactor = 80)")


def downgrade() -> None:
    op.execute("ALTER TABLE occ.controller_work RESET (fillfactor)")
    op.execute(
        "CREATE INDEX controller_work_expired ON occ.controller_work (lease_expires_at, id)"
        " WHERE state = 'claimed'"
    )
