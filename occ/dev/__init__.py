"""``occ dev``: the whole product on one machine, with no external services; used by ``occ.cli``.

Starts an embedded PostgreSQL (pgserver) unless ``OCC_DATABASE_URL`` is set and a Redis process
unless ``OCC_BROKER_URL`` is set (kombu ``filesystem://`` under ``<home>/broker`` when no
``redis-server`` exists), migrates, bootstraps the Installation (admin key in
``<home>/admin.key``, mode 0600), then runs the API, the control and driver workers and beat as
supervised child processes. When all are ready it prints one JSON line (``dev.ready``) on
stdout; everything else goes to ``<home>/logs/``. Ctrl-C or SIGTERM stops the fleet in an order
that leaves no claim behind, then Redis and PostgreSQL.

Modules: ``runner`` (the run), ``home`` (layout, lock, secrets), ``postgres`` and ``broker``
(embedded services), ``bootstrap`` (migration, Installation, key file), ``children`` (the four
children, from the process table, and their stop order), ``fleet`` (spawn, supervise, ordered
stop), ``restarts`` (the backoff policy), ``processes`` (one child process), ``readiness``,
``logs``, ``terminal``. Nothing but ``occ.cli`` imports the package.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from occ.dev import options, runner


def run(run_options: options.DevOptions, environ: Mapping[str, str] | None = None) -> int:
    """Run until stopped; the exit code (0 after a requested stop, 1 on a failure)."""
    return runner.Runner(run_options, dict(os.environ if environ is None else environ)).run()
