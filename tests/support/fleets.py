"""A fleet of running Agents made in bulk, as rows only: for the tests and benchmarks of the
fleet observer, which need hundreds or thousands of Agents that deploys would take minutes to
make."""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa

from occ.state.db import Database
from occ.state.secret_store import SecretStore

PER_NAMESPACE: Final = 100
"""Agents per Namespace."""

_ROWS: Final = sa.text("""
    WITH spaces AS (
      INSERT INTO occ.namespaces (id, name, created_by, status)
      SELECT 'ns_' || gen_random_uuid(), 'fleet-' || n, :admin, 'ready'
        FROM generate_series(1, :spaces) n
      RETURNING id
    ), configurations AS (
      INSERT INTO occ.configurations (id, namespace_id, name, document)
      SELECT 'cfg_' || gen_random_uuid(), id, 'default', '{"model": "fleet"}' FROM spaces
      RETURNING id, namespace_id
    ), secrets AS (
      INSERT INTO occ.secrets (id, namespace_id, name, value_ciphertext)
      SELECT 'sec_' || gen_random_uuid(), id, 'token', '\\x00'::bytea FROM spaces
      RETURNING id, namespace_id
    ), planned AS (
      SELECT c.namespace_id, c.id AS configuration_id, s.id AS secret_id,
             'agt_' || gen_random_uuid() AS agent_id, 'prn_' || gen_random_uuid() AS principal_id,
             'rev_' || gen_random_uuid() AS revision_id, n
        FROM configurations c JOIN secrets s ON s.namespace_id = c.namespace_id
        CROSS JOIN generate_series(1, :per_namespace) n
    ), principals AS (
      INSERT INTO occ.principals (id, name, kind, namespace_id, agent_id)
      SELECT principal_id, 'agent-' || n, 'service', namespace_id, agent_id FROM planned
    ), agents AS (
      INSERT INTO occ.agents
        (id, namespace_id, name, configuration_id, harness_id, harness_version, execution_mode,
         harness_auth_secret_id, compute_driver, service_principal_id, desired_runtime_state,
         revision_counter)
      SELECT agent_id, namespace_id, 'agent-' || n, configuration_id, 'openclaw', '1.0.0',
             'embedded', secret_id, CAST(:driver AS text), principal_id, 'running', 1
        FROM planned
    )
    INSERT INTO occ.agent_revisions
      (id, namespace_id, agent_id, revision_number, actor_id, configuration_id,
       configuration_generation, configuration_document, harness_id, harness_version,
       harness_mode, compute_driver, harness_auth, service_principal_id)
    SELECT revision_id, namespace_id, agent_id, 1, :admin, configuration_id, 1,
           '{"model": "fleet"}', 'openclaw', '1.0.0', 'embedded', CAST(:driver AS text),
           jsonb_build_object('kind', 'secret', 'secretId', secret_id), principal_id
      FROM planned
""")

_ACTIVATE: Final = sa.text("""
    UPDATE occ.agents a SET active_revision_id = r.id, endpoint = :scheme || r.agent_id
      FROM occ.agent_revisions r
     WHERE r.agent_id = a.id AND a.active_revision_id IS NULL
""")

_OBSERVED_READY: Final = sa.text("""
    INSERT INTO occ.agent_runtime (agent_id, revision_id, status, reason_code)
    SELECT id, active_revision_id, 'ready', 'REVISION_ACTIVATED' FROM occ.agents
     WHERE active_revision_id IS NOT NULL
    ON CONFLICT (agent_id) DO NOTHING
""")


_GRANTS: Final = sa.text("""
    WITH roles AS (
      INSERT INTO occ.roles (id, name, namespace_id, permissions)
      SELECT 'rol_' || gen_random_uuid(), 'fleet-runtime', n.id,
             ARRAY['configuration:read', 'secret:operate']
        FROM occ.namespaces n WHERE n.name LIKE 'fleet-%'
      RETURNING id, namespace_id
    )
    INSERT INTO occ.access_bindings (id, role_id, principal_id, namespace_id, created_by)
    SELECT 'bnd_' || gen_random_uuid(), roles.id, a.service_principal_id, a.namespace_id, :admin
      FROM occ.agents a JOIN roles ON roles.namespace_id = a.namespace_id
""")

_DEPLOYMENTS: Final = sa.text("""
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, revision_id, actor_id, state, available_at,
       completed_at, reason_code, created_at, updated_at)
    SELECT 'agent_revision:' || r.id || '\\:reconcile', 'revision_reconcile', r.namespace_id,
           r.agent_id, r.id, r.actor_id, 'succeeded', r.created_at, clock_timestamp(),
           'REVISION_ACTIVATED', r.created_at, clock_timestamp()
      FROM occ.agent_revisions r
     WHERE NOT EXISTS (SELECT 1 FROM occ.controller_work w
                        WHERE w.id = 'agent_revision:' || r.id || '\\:reconcile')
""")

_SECRETS: Final = sa.text("SELECT id, namespace_id FROM occ.secrets")
_SEAL: Final = sa.text("UPDATE occ.secrets SET value_ciphertext = :sealed WHERE id = :id")


def running_agents(
    owner: Database,
    admin: str,
    agents: int,
    *,
    driver: str = "kubernetes",
    per_namespace: int = PER_NAMESPACE,
) -> None:
    """``agents`` running Agents of ``driver`` (rounded up to whole Namespaces of
    ``per_namespace``), each with one active revision (its deployment succeeded), recorded
    ready, its service principal
    allowed to read its Configuration and operate its Secret (as the database owner: one
    statement per table)."""
    spaces = -(-agents // per_namespace)
    with owner.transaction() as session:
        session.execute(
            _ROWS,
            {"admin": admin, "spaces": spaces, "per_namespace": per_namespace, "driver": driver},
        )
        session.execute(_ACTIVATE, {"scheme": "pending://"})
        session.execute(_GRANTS, {"admin": admin})
        session.execute(_DEPLOYMENTS)
        session.execute(_OBSERVED_READY)
        session.execute(sa.text("ANALYZE occ.agents"))
        session.execute(sa.text("ANALYZE occ.agent_revisions"))


def seal_secrets(owner: Database, store: SecretStore, value: str) -> None:
    """Give every Secret ``value``, sealed by ``store`` (what a pass that unseals needs)."""
    with owner.transaction() as session:
        secrets = session.execute(_SECRETS).all()
        session.execute(
            _SEAL,
            [
                {"id": row.id, "sealed": store.seal(row.namespace_id, row.id, value)}
                for row in secrets
            ],
        )
