"""Every resource list reads its page through an index in its order: ``(created_at, id)``
after the list's filter (the Namespace, the principal), so a page after a cursor reads the
rows it shows, however long the list.
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"

_INDEXES = (
    "namespaces_live_created ON occ.namespaces (created_at, id) WHERE deleted_at IS NULL",
    "configurations_namespace_created ON occ.configurations (namespace_id, created_at, id)",
    "secrets_namespace_created ON occ.secrets (namespace_id, created_at, id)",
    "agents_namespace_created ON occ.agents (namespace_id, created_at, id)",
    "principals_created ON occ.principals (created_at, id)",
    "api_keys_principal_created ON occ.api_keys (principal_id, created_at, id)",
    "roles_live_created ON occ.roles (created_at, id) WHERE deleted_at IS NULL",
    "access_bindings_live_created ON occ.access_bindings (created_at, id) WHERE revoked_at IS NULL",
    "restrictions_created ON occ.restrictions (created_at, id)",
)


def upgrade() -> None:
    for index in _INDEXES:
        op.execute(f"CREATE INDEX {index}")
    # the principal's keys in order serve every lookup by principal as well
    op.execute("DROP INDEX occ.api_keys_principal")


def downgrade() -> None:
    op.execute("CREATE INDEX api_keys_principal ON occ.api_keys (principal_id)")
    for index in _INDEXES:
        op.execute(f"DROP INDEX occ.{index.split(' ', 1)[0]}")
