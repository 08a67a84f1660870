"""The fleet's bulk observation of docker gateways: one container listing, judged as a deploy
pass judges one container (``health.state_of``).

A listing entry settles most containers: one that does not run (exited, restarting, paused: a
repair starts or unpauses it) is not ready; one that runs with its health check passed (or
without one) is healthy at its published port. Only a container whose check says ``starting``
or ``unhealthy`` is inspected, because its failing streak decides: a check that has neither
passed since the container (re)started or was unpaused nor failed is ``starting``, which the
observer neither counts healthy nor repairs (it looks again next interval); one that failed is
not ready, and the observer repairs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from occ.drivers.compute import base, standin
from occ.drivers.compute.docker import engine, health, workload

NOT_READY: Final = "REVISION_NOT_READY"
GONE: Final = "REVISION_NOT_RUNNING"
"""An observed revision has no gateway container."""
_IN_DOUBT: Final = ("(health: starting)", "(unhealthy)")
"""What a listing entry's ``Status`` shows of a check that has not passed (or failed)."""

Inspect = Callable[[str], Mapping[str, Any]]


def observed(listed: Mapping[str, Any] | None, inspect: Inspect) -> base.Observed:
    """A listed gateway container as an observation (``None``: no container); ``inspect``
    reads the engine's inspect document of a container whose listing leaves it in doubt."""
    if listed is None:
        return base.Observed(False, code=GONE)
    if listed.get("State") != "running":
        return base.Observed(False, code=NOT_READY)
    state = health.State.PROBE
    if any(mark in str(listed.get("Status", "")) for mark in _IN_DOUBT):
        try:
            state = health.state_of(inspect(str(listed["Id"])))
        except engine.NotFound:  # removed since the listing
            return base.Observed(False, code=GONE)
    port = workload.listed_port(listed)
    if state == health.State.STARTING:
        return base.Observed(False, code=NOT_READY, starting=True)
    if state != health.State.PROBE or port is None:
        return base.Observed(False, code=NOT_READY)
    return base.Observed(True, standin.endpoint(port))
