"""What one ``observe`` command's answer says about a revision: whether its Agent's unit runs it,
where it answers, and what is staged for it. Pure functions over the helper's JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from occ.drivers.compute import base
from occ.drivers.compute.ssh import connection, hosts

HOST_REMOVED: Final = "SSH_HOST_REMOVED"
NOT_ACTIVE: Final = "SSH_UNIT_RUNS_ANOTHER_REVISION"
UNIT_STOPPED: Final = "SSH_UNIT_STOPPED"
UNHEALTHY: Final = "GATEWAY_UNHEALTHY"
"""The unit runs the revision, but its gateway fails its health check."""


def revision_state(
    pool: Sequence[hosts.Host],
    seen: Mapping[str, dict[str, Any] | None],
    revision: base.RevisionSpec,
) -> base.Observed:
    """A revision as the hosts' observations show it."""
    unreachable = False
    for host in pool:
        found = seen.get(host.name)
        if found is None:
            unreachable = True
            continue
        if revision.namespace_id not in found["namespaces"]:
            continue
        held = agent(found, revision)
        if held is None or held.get("unitRevision") != revision.revision_id:
            return base.Observed(False, code=NOT_ACTIVE)
        if not held.get("active") or held.get("port") is None:
            return base.Observed(False, code=UNIT_STOPPED)
        if held.get("healthy") is False:  # (a helper older than the health check omits it)
            return base.Observed(False, code=UNHEALTHY)
        return base.Observed(True, f"http://{host.host}:{int(held['port'])}")
    return base.Observed(False, code=connection.UNREACHABLE if unreachable else HOST_REMOVED)


def agent(seen: dict[str, Any], revision: base.RevisionSpec) -> dict[str, Any] | None:
    """What an observation of the host holds of the revision's Agent."""
    namespace = seen["namespaces"].get(revision.namespace_id) or {}
    found = namespace.get("agents", {}).get(revision.agent_id)
    return found if isinstance(found, dict) else None


def has_credential(held: dict[str, Any] | None, revision: base.RevisionSpec) -> bool:
    """Whether a pass without the credential (maintenance) finds one staged already."""
    return held is not None and revision.revision_id in held.get("credentials", ())
