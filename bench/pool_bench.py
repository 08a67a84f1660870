"""The cost of pinging pooled connections: short transactions per second with no ping, a ping
of connections idle for a second (occ's setting), and a ping before every use (SQLAlchemy's
``pool_pre_ping``), measured side by side in one run.

Needs ``OCC_TEST_DATABASE_URL`` (the server of the tests); uses its database as is.
stdout: ``tx_per_s_no_ping``, ``tx_per_s_idle_ping``, ``tx_per_s_always_ping`` and the ratios
``idle_ping_ratio`` and ``always_ping_ratio`` (to no ping).
"""

from __future__ import annotations

import argparse
import sys
import time

import sqlalchemy as sa

from occ.state.db import IDLE_PING_AFTER_S, Database
from tests.support import databases


def _rate(database: Database, seconds: float) -> float:
    done, deadline = 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        with database.transaction() as session:
            session.execute(sa.text("SELECT 1"))
        done += 1
    return done / seconds


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--seconds", type=float, default=3.0)
    options.add_argument("--rounds", type=int, default=3)
    arguments = options.parse_args()
    url = databases.server_url()
    variants = {"no_ping": None, "idle_ping": IDLE_PING_AFTER_S, "always_ping": 0.0}
    engines = {
        name: Database(url, pool_size=2, idle_ping_after_s=after)
        for name, after in variants.items()
    }
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(arguments.rounds):  # interleaved, so machine noise hits every variant
        for name, database in engines.items():
            rates[name].append(_rate(database, arguments.seconds))
    best = {name: max(values) for name, values in rates.items()}
    for name, value in best.items():
        print(f"tx_per_s_{name}={value:.0f}")
    for name in ("idle_ping", "always_ping"):
        print(f"{name}_ratio={best[name] / best['no_ping']:.3f}")
    print(
        f"pool: idle ping {best['idle_ping'] / best['no_ping']:.2f}x, always ping "
        f"{best['always_ping'] / best['no_ping']:.2f}x of no ping",
        file=sys.stderr,
    )
    for database in engines.values():
        database.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
