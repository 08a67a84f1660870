"""The work queue benchmark's database, as the URL's user: created and migrated, emptied
between phases, filled with bulk INSERT ... SELECT statements, then vacuumed (and
checkpointed when the user may)."""

from __future__ import annotations

import contextlib
import math

import sqlalchemy as sa
from alembic import util as alembic_util
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url

from bench.support import log
from occ.state import db, schema


def admin_engine(url: str) -> sa.Engine:
    return sa.create_engine(
        db.normalize_url(url), isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
    )


def ensure_database(url: str, *, recreate: bool = False) -> None:
    """Create the URL's database if it does not exist (or anew), then migrate it.

    A database stamped with a revision the migrations no longer have (one was renamed or
    folded away) is dropped and created again: it is the benchmark's own, emptied every phase.
    """
    target = make_url(db.normalize_url(url))
    name = target.database
    if not name:
        raise SystemExit("OCC_TEST_DATABASE_URL must name a database")
    server = admin_engine(target.set(database="postgres").render_as_string(hide_password=False))

    def create(drop: bool) -> None:
        with server.connect() as connection:
            quoted = connection.dialect.identifier_preparer.quote(name)
            if drop:
                connection.execute(sa.text(f"DROP DATABASE IF EXISTS {quoted}"))
            exists = connection.execute(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            ).first()
            if exists is None:
                connection.execute(sa.text(f"CREATE DATABASE {quoted}"))

    create(recreate)
    try:
        schema.upgrade(url)
    except alembic_util.CommandError as exc:
        log(True, f"{name} cannot be migrated ({exc}): creating it again")
        create(True)
        schema.upgrade(url)
    finally:
        server.dispose()


def empty(engine: sa.Engine) -> None:
    """TRUNCATE every occ table but Alembic's version table."""
    with engine.connect() as connection:
        tables = (
            connection.execute(
                sa.text(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'occ'"
                    " AND tablename <> 'alembic_version' ORDER BY tablename"
                )
            )
            .scalars()
            .all()
        )
        connection.execute(
            sa.text("TRUNCATE " + ", ".join(f"occ.{table}" for table in tables) + " CASCADE")
        )


def settle(engine: sa.Engine) -> None:
    """VACUUM ANALYZE what the phase inserted and, when allowed, CHECKPOINT.

    The checkpoint keeps the setup's dirty pages from being written out during measurement.
    """
    with engine.connect() as connection:
        connection.execute(
            sa.text(
                "VACUUM (ANALYZE) occ.controller_work, occ.agent_revisions, occ.agents,"
                " occ.principals, occ.namespaces, occ.configurations, occ.audit_events"
            )
        )
        with contextlib.suppress(sa_exc.DBAPIError):  # needs superuser or pg_checkpoint
            connection.execute(sa.text("CHECKPOINT"))


_ACTOR = """
    INSERT INTO occ.principals (id, name, kind)
    VALUES ('prn_' || gen_random_uuid(), 'bench-actor', 'human')
    RETURNING id"""

_NAMESPACES = """
    INSERT INTO occ.namespaces (id, name, status, created_by)
    SELECT 'ns_' || gen_random_uuid(), 'bench-ns-' || g, 'ready', %(actor)s
      FROM generate_series(0, %(namespaces)s - 1) g"""

_CONFIGURATIONS = """
    INSERT INTO occ.configurations (id, namespace_id, name, document)
    SELECT 'cfg_' || gen_random_uuid(), n.id, 'bench-config', '{}'::jsonb
      FROM occ.namespaces n"""

# Agent g lives in namespace g mod namespaces; its name carries g. Each Agent owns one service
# principal (the two foreign keys between them are deferred to commit).
_AGENTS = """
    WITH ns AS (
      SELECT n.id, c.id AS configuration_id, split_part(n.name, '-', 3)::int AS k
        FROM occ.namespaces n JOIN occ.configurations c ON c.namespace_id = n.id
    ), placed AS MATERIALIZED (
      SELECT f.g, f.id, f.principal_id, ns.id AS namespace_id, ns.configuration_id
        FROM (SELECT g, 'agt_' || gen_random_uuid() AS id,
                     'prn_' || gen_random_uuid() AS principal_id
                FROM generate_series(0, %(agents)s - 1) g) f
        JOIN ns ON ns.k = mod(f.g, %(namespaces)s)
    ), service_principals AS (
      INSERT INTO occ.principals (id, name, kind, namespace_id, agent_id)
      SELECT principal_id, 'bench-agent-' || g, 'service', namespace_id, id FROM placed
    )
    INSERT INTO occ.agents
      (id, namespace_id, name, configuration_id, harness_id, harness_version, execution_mode,
       compute_driver, service_principal_id)
    SELECT id, namespace_id, 'bench-agent-' || g, configuration_id, 'openclaw', '1.0.0',
           'embedded', 'local', principal_id
      FROM placed"""

_REVISIONS = """
    INSERT INTO occ.agent_revisions
      (id, namespace_id, agent_id, revision_number, actor_id, configuration_id,
       configuration_generation, configuration_document, harness_id, harness_version,
       harness_mode, compute_driver, harness_auth, service_principal_id)
    SELECT 'rev_' || gen_random_uuid(), a.namespace_id, a.id, r, %(actor)s, a.configuration_id,
           1, '{}'::jsonb, 'openclaw', '1.0.0', 'embedded', 'local',
           jsonb_build_object('kind', 'secret', 'secretId', 'sec_' || gen_random_uuid()),
           a.service_principal_id
      FROM occ.agents a CROSS JOIN generate_series(1, %(revisions)s) r"""

# One queued item per revision, lanes interleaved in FIFO order (revision 1 of every Agent,
# then revision 2 of every Agent, ...), as work arriving from many Agents at once looks.
_QUEUED = """
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, revision_id, actor_id, available_at, created_at,
       updated_at)
    SELECT 'agent_revision:' || r.id || ':reconcile', 'revision_reconcile', r.namespace_id,
           r.agent_id, r.id,
           %(actor)s, o.at, o.at, o.at
      FROM occ.agent_revisions r JOIN occ.agents a ON a.id = r.agent_id
     CROSS JOIN LATERAL (
       SELECT now() - interval '1 hour' + ((r.revision_number - 1) * %(agents)s
              + split_part(a.name, '-', 3)::int) * interval '1 microsecond' AS at) o"""

# Terminal history: Agent stop work that succeeded long ago, spread over the same Agents. The
# rows of one Agent are consecutive so the shape CHECK's per-Agent regular expression stays in
# PostgreSQL's regex cache.
_TERMINAL = """
    INSERT INTO occ.controller_work
      (id, kind, namespace_id, agent_id, actor_id, agent_target, state, attempt_count,
       available_at, created_at, updated_at, completed_at, reason_code)
    SELECT 'agent:' || a.id || ':reconcile:stopped:' || gen_random_uuid(), 'agent_stopped',
           a.namespace_id, a.id,
           %(actor)s, 'stopped', 'succeeded', 1, o.at, o.at, o.at + interval '1 second',
           o.at + interval '1 second', 'AGENT_STOPPED'
      FROM generate_series(0, %(rows)s - 1) g
      JOIN (SELECT id, namespace_id, split_part(name, '-', 3)::int AS k FROM occ.agents) a
        ON a.k = g / %(per_agent)s
     CROSS JOIN LATERAL (SELECT now() - interval '30 days' + g * interval '1 second' AS at) o"""


def populate(engine: sa.Engine, *, agents: int, revisions: int, terminal: int = 0) -> int:
    """Agents with ``revisions`` queued revision items each (+ ``terminal`` succeeded rows).

    Returns the number of queued items. One transaction, bulk statements only.
    """
    namespaces = max(1, min(100, agents))
    with engine.begin() as connection:
        actor = connection.exec_driver_sql(_ACTOR).scalar_one()
        params = {
            "actor": actor,
            "namespaces": namespaces,
            "agents": agents,
            "revisions": revisions,
            "rows": terminal,
            "per_agent": max(1, math.ceil(terminal / agents)),
        }
        for statement in (_NAMESPACES, _CONFIGURATIONS, _AGENTS, _REVISIONS, _QUEUED):
            connection.exec_driver_sql(statement, params)
        if terminal:
            connection.exec_driver_sql(_TERMINAL, params)
    return agents * revisions
