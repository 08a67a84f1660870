"""The Pods the simulated Deployment controller runs, and what their containers print at start.

``pod`` is a Pod of a ReplicaSet as the controller and kubelet leave it (running and ready, or
waiting). What a container prints at start (``start_lines``): the gateway image runs
``occ.drivers.gateway`` with the options in the container's ``args``; it reads its
configuration file from the ConfigMap volume mounted at the ``--config`` file's directory and
prints one ``gateway.started`` line with the startup warnings
``gateway_warnings.of_configuration`` derives from that document (the code the gateway runs),
or ``gateway.failed`` when the file cannot be read. A container that is not a stand-in gateway
(no ``--revision-id``) prints nothing. Pure over the objects they are given; no HTTP.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from occ.drivers import gateway_warnings
from tests.support.kube_api import resources, store

Obj = resources.Obj


def start_lines(
    container: Obj, pod_spec: Obj, config_map: Callable[[str], Obj | None]
) -> list[str]:
    """The lines ``container`` of a Pod with ``pod_spec`` prints at start; ``config_map``
    finds a ConfigMap of the Pod's namespace by name."""
    options = _options(container.get("args") or [])
    revision_id, config = options.get("--revision-id"), options.get("--config")
    if revision_id is None or config is None:
        return []
    document = _configuration(container, pod_spec, config, config_map)
    if document is None:
        return [
            _line(
                "gateway.failed",
                revisionId=revision_id,
                reason="FileNotFoundError",
                detail="cannot read the configuration snapshot",
            )
        ]
    stand_in = document.get("standIn") if isinstance(document, dict) else None
    healthy = not (isinstance(stand_in, dict) and stand_in.get("healthy") is False)
    return [
        _line(
            gateway_warnings.STARTED,
            revisionId=revision_id,
            agentId=options.get("--agent-id"),
            port=int(options.get("--port") or 0),
            configurationGeneration=int(options.get("--generation") or 0),
            healthy=healthy,
            warnings=gateway_warnings.of_configuration(document),
        )
    ]


def _options(args: list[str]) -> dict[str, str]:
    """``--name value`` pairs of a command line (a flag alone gets ``""``)."""
    found: dict[str, str] = {}
    for index, arg in enumerate(args):
        if arg.startswith("--"):
            following = args[index + 1] if index + 1 < len(args) else ""
            found[arg] = "" if following.startswith("--") else following
    return found


def _configuration(
    container: Obj, pod_spec: Obj, path: str, config_map: Callable[[str], Obj | None]
) -> Any | None:
    """The JSON document at ``path`` in the container (``None``: not there, or not JSON)."""
    directory, _, key = path.rpartition("/")
    mounts = {m.get("mountPath"): m.get("name") for m in container.get("volumeMounts") or []}
    volumes = {v.get("name"): v for v in pod_spec.get("volumes") or []}
    volume = volumes.get(mounts.get(directory)) or {}
    name = (volume.get("configMap") or {}).get("name")
    found = config_map(name) if isinstance(name, str) else None
    text = ((found or {}).get("data") or {}).get(key)
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _line(event: str, **fields: Any) -> str:
    """One line as the gateway prints it (compact JSON, its event and time first)."""
    line = {"event": event, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields}
    return json.dumps(line, separators=(",", ":"))


def pod(
    template: Obj,
    namespace: str,
    name: str,
    replica_set: str,
    replica_set_uid: str,
    template_hash: str,
    pod_ip: str,
    ready: bool,
    waiting_reason: str,
) -> Obj:
    """Pod ``name`` of ``replica_set`` running ``template`` (``ready``, or waiting for
    ``waiting_reason``)."""
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels["pod-template-hash"] = template_hash
    spec = json.loads(json.dumps(template.get("spec") or {}))
    condition = "True" if ready else "False"
    statuses = []
    for container in spec.get("containers") or []:
        state = (
            {"running": {"startedAt": store.now()}}
            if ready
            else {"waiting": {"reason": waiting_reason}}
        )
        statuses.append(
            {
                "name": container.get("name", ""),
                "image": container.get("image", ""),
                "imageID": "",
                "ready": ready,
                "restartCount": 0,
                "started": ready,
                "state": state,
            }
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": replica_set,
                    "uid": replica_set_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": {
            "phase": "Running" if ready else "Pending",
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Initialized", "status": "True"},
                {"type": "ContainersReady", "status": condition},
                {"type": "Ready", "status": condition},
            ],
            "containerStatuses": statuses,
        },
    }
