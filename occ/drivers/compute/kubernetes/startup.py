"""A gateway's startup warnings on Kubernetes: read from its ``gateway.started`` log line.

Once a revision's rollout is ready, the gateway of its ready Pod printed one JSON line at start
(``gateway_warnings.STARTED``) carrying the warnings it also shows in ``/healthz``, which the
driver cannot reach from outside the cluster. The Pod read is the newest Ready, not
terminating gateway Pod whose template names the revision: a ``Recreate`` rollout is ready only
once the Pods of earlier templates are gone, so it is the revision's current ReplicaSet's (no
ReplicaSet is read). Only the start of its log is read (``LOG_LIMIT_BYTES``, complete lines).
A log without the line, or not readable yet, reports no warnings; a line that is there but
malformed is evidence that cannot establish success: ``INVALID_DRIVER_OBSERVATION``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from occ.drivers import gateway_warnings
from occ.drivers.compute import base, standin
from occ.drivers.compute.kubernetes import client, kinds, logs, naming
from occ.foundation import codes

LOG_LIMIT_BYTES: Final = 64 * 1024
"""How much of the start of a gateway's log is read: its start line with the most warnings a
gateway reports (``gateway_warnings.MAX_WARNINGS``) is about a third of it."""
MALFORMED: Final = "the gateway's start line reports malformed warnings"


def ready_pod(pods: Iterable[Mapping[str, Any]], revision_id: str) -> str | None:
    """The name of the newest Ready, not terminating Pod running ``revision_id``, if any."""
    found = [
        pod
        for pod in pods
        if _revision_of(pod) == revision_id
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
        and _is_ready(pod)
    ]
    if not found:
        return None
    newest = max(
        found,
        key=lambda pod: (
            str(pod["metadata"].get("creationTimestamp") or ""),
            str(pod["metadata"].get("name") or ""),
        ),
    )
    name = newest["metadata"].get("name")
    return name if isinstance(name, str) else None


def warnings_in(log: str, revision_id: str) -> tuple[base.StartupWarning, ...] | None:
    """The warnings of the first ``gateway.started`` line among the complete lines of
    ``log`` (none without one); ``None`` when that line is malformed or names another
    revision."""
    complete = log.split("\n")[:-1]  # the last piece has no end yet (or is empty)
    for line in complete:
        try:
            fields = gateway_warnings.started_fields(line)
        except ValueError:
            return None
        if fields is None:
            continue
        if fields.get("revisionId") != revision_id:
            return None
        return standin.startup_warnings(fields)
    return ()


def observed(
    api: client.KubernetesApi, namespace: str, revision: base.RevisionSpec
) -> base.Ready | base.Failed:
    """The ready revision's startup warnings (``Ready.warnings``), or ``Failed`` with
    ``INVALID_DRIVER_OBSERVATION`` when its start line is malformed."""
    selector = naming.selector(
        {naming.AGENT_ID: revision.agent_id, naming.ROLE: naming.Role.GATEWAY}
    )
    pod = ready_pod(api.find(kinds.POD, namespace, selector), revision.revision_id)
    if pod is None:
        return base.Ready()
    read = logs.head(api, namespace, pod, limit_bytes=LOG_LIMIT_BYTES)
    if read is None:
        return base.Ready()
    warnings = warnings_in(read.decode("utf-8", "replace"), revision.revision_id)
    if warnings is None:
        return base.Failed(codes.Code.INVALID_DRIVER_OBSERVATION, permanent=True, reason=MALFORMED)
    return base.Ready(warnings=warnings)


def _revision_of(pod: Mapping[str, Any]) -> str | None:
    metadata = pod.get("metadata") or {}
    found = (metadata.get("annotations") or {}).get(naming.REVISION_ANNOTATION) or (
        metadata.get("labels") or {}
    ).get(naming.REVISION_ID)
    return found if isinstance(found, str) else None


def _is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
