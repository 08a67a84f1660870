"""Migration 0018 on a populated audit log: how long converting an unpartitioned log of
``--events`` events (default 5 million, a year of months) into month partitions takes, beside
what a plain copy of the same rows into a table with the same checks and indexes takes on the
same machine in the same run.

Prints ``name=value`` figures on stdout and a summary on stderr.

    OCC_TEST_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
      PYTHONPATH=. .venv/bin/python bench/audit_migration.py [--events N] [-v]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Final

import sqlalchemy as sa

from bench.support import log, report
from occ.state import schema
from occ.state.db import Database
from tests.support import databases

EVENTS: Final = 5_000_000
MONTHS: Final = 12

_FILL: Final = sa.text("""
    INSERT INTO occ.audit_events
      (id, occurred_at, kind, action, actor_id, namespace_id, resource_id, outcome, details)
    SELECT 'aud_' || gen_random_uuid(),
           clock_timestamp() - :months * interval '30 days'
             + n * (:months * interval '30 days' / :count),
           'mutation', 'bench.event', 'prn_bench', 'ns_' || (n % 100), 'res_' || (n % 5000),
           'success', jsonb_build_object('n', n)
      FROM generate_series(1, :count) n
""")

_PLAIN_COPY: Final = """
    CREATE TABLE occ.audit_copy (LIKE occ.audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
    INSERT INTO occ.audit_copy SELECT * FROM occ.audit_events;
    ALTER TABLE occ.audit_copy ADD PRIMARY KEY (id);
    CREATE UNIQUE INDEX ON occ.audit_copy (sequence);
    CREATE INDEX ON occ.audit_copy (namespace_id, sequence);
    CREATE INDEX ON occ.audit_copy (resource_id, sequence);
    CREATE INDEX ON occ.audit_copy (work_id, sequence);
"""


def measure(events: int, verbose: bool) -> dict[str, float]:
    urls = databases.create_test_database(f"occ_audit_bench_{os.getpid()}")
    owner = Database(urls.owner, pool_size=1)
    try:
        schema.downgrade(urls.owner, "0017")
        started = time.perf_counter()
        with owner.transaction() as session:
            session.execute(_FILL, {"count": events, "months": MONTHS})
        with owner.autocommit_connection() as connection:
            databases.psycopg_of(connection).execute("VACUUM ANALYZE occ.audit_events")
        log(verbose, f"{events:,} events written in {time.perf_counter() - started:.1f} s")

        started = time.perf_counter()
        with owner.transaction() as session:
            for statement in _PLAIN_COPY.split(";"):
                if statement.strip():
                    session.execute(sa.text(statement))
            session.execute(sa.text("DROP TABLE occ.audit_copy"))
        plain_s = time.perf_counter() - started
        log(verbose, f"plain copy with the same indexes: {plain_s:.1f} s")

        owner.dispose()
        started = time.perf_counter()
        schema.upgrade(urls.owner, "0018")
        migration_s = time.perf_counter() - started
        log(verbose, f"migration 0018: {migration_s:.1f} s")

        with owner.transaction() as session:
            moved = session.execute(sa.text("SELECT count(*) FROM occ.audit_events")).scalar_one()
            stray = session.execute(
                sa.text("SELECT count(*) FROM occ.audit_events_default")
            ).scalar_one()
            tree = session.execute(
                sa.text(
                    "SELECT count(*) FILTER (WHERE isleaf) AS leaves,"
                    " sum(pg_total_relation_size(relid)) AS size"
                    " FROM pg_partition_tree('occ.audit_events')"
                )
            ).one()
        if moved != events or stray != 0:
            raise SystemExit(f"the migration moved {moved} of {events} events ({stray} stray)")
        return {
            "events": events,
            "month_partitions": tree.leaves - 1,
            "migration_s": migration_s,
            "plain_copy_s": plain_s,
            "bytes_per_event": int(tree.size) / events,
        }
    finally:
        owner.dispose()
        databases.drop_database(urls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Migration 0018 on a populated audit log.")
    parser.add_argument("--events", type=int, default=EVENTS)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    figures = measure(args.events, args.verbose)
    ratio = figures["migration_s"] / figures["plain_copy_s"]
    report(
        figures,
        [
            f"migration 0018 over {args.events:,} events: {figures['migration_s']:.0f} s, "
            f"{ratio:.2f}x a plain copy with the same checks and indexes "
            f"({figures['plain_copy_s']:.0f} s); {figures['bytes_per_event']:.0f} bytes an "
            "event with its indexes (reported: the log is locked meanwhile)"
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
