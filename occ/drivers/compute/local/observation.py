"""How the ``local`` driver observes revisions: one pass over the process table, then the
health of what runs. A revision is healthy while the gateway its ``runtime.json`` records runs
**and** answers its ``/healthz`` for this revision; its endpoint is that gateway's port.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping, Sequence
from typing import Final

from occ.drivers.compute import base, standin
from occ.drivers.compute.local import gateways, store

NOT_RUNNING: Final = "REVISION_NOT_RUNNING"
"""An observed revision's gateway is not running."""

UNHEALTHY: Final = "GATEWAY_UNHEALTHY"
"""An observed revision's gateway runs but fails its health check."""
OBSERVE_HEALTH_TIMEOUT_S: Final = 0.5
"""How long an observation waits for one gateway's ``/healthz``."""
OBSERVE_HEALTH_CHECKS: Final = 16
"""Health checks one observation runs at once."""


def observe(
    layout: store.Layout, revisions: Sequence[base.RevisionSpec]
) -> Mapping[str, base.Observed]:
    """Each revision's observation: ``REVISION_NOT_RUNNING`` when its gateway does not run,
    ``GATEWAY_UNHEALTHY`` when it runs but fails its health check. The health checks run side
    by side, each bounded by ``OBSERVE_HEALTH_TIMEOUT_S``."""
    running = gateways.running_directories(layout.agents)
    observed: dict[str, base.Observed] = {}
    ports: dict[str, int] = {}
    for revision in revisions:
        directory = layout.revision_dir(revision.agent_id, revision.revision_id)
        runtime = store.read_json(directory / store.RUNTIME) or {}
        pid, port = runtime.get("pid"), runtime.get("port")
        if isinstance(pid, int) and running.get(directory) == pid and port is not None:
            ports[revision.revision_id] = int(port)
        else:
            observed[revision.revision_id] = base.Observed(False, code=NOT_RUNNING)
    for revision_id, healthy in _health_of(ports).items():
        port = ports[revision_id]
        observed[revision_id] = (
            base.Observed(True, standin.endpoint(port))
            if healthy
            else base.Observed(False, code=UNHEALTHY)
        )
    return observed


def _health_of(ports: Mapping[str, int]) -> dict[str, bool]:
    """Whether each running gateway answers its health check, by revision id."""
    if not ports:
        return {}

    def check(item: tuple[str, int]) -> bool:
        revision_id, port = item
        return standin.answers_for(port, revision_id, timeout_s=OBSERVE_HEALTH_TIMEOUT_S)

    workers = min(OBSERVE_HEALTH_CHECKS, len(ports))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip(ports, pool.map(check, ports.items()), strict=True))
