"""What the observation cache watches: the kinds an observation reads and what it keeps of each.

Every kind is watched across all namespaces with occ's ``managed-by`` label selector (the
EndpointSlice controller copies a Service's labels onto its slices, so occ's slices carry it
too). Namespaces, ConfigMaps, Secrets, ServiceAccounts and volumes are watched as metadata
only: an observation needs to know they exist, are occ's and are not being deleted, never
their contents (a Secret's data never reaches the cache). Of each object only what the
observation rules read is kept, in wire form, so ``rollout`` and ``ensure`` judge cached
objects as they judge fetched ones. Pure: no I/O.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.drivers.compute.kubernetes import client, kinds, naming

Wire = client.Wire

SELECTOR: Final = naming.selector({naming.MANAGED_BY: naming.MANAGER})
"""The label selector of every watch: the objects occ manages."""
SERVICE_NAME: Final = "kubernetes.io/service-name"
"""The label of an EndpointSlice that names its Service."""

_KEPT_LABELS: Final = frozenset(
    {
        naming.MANAGED_BY,
        naming.NAMESPACE_ID,
        naming.AGENT_ID,
        naming.REVISION_ID,
        naming.ROLE,
        SERVICE_NAME,
    }
)
"""Labels an observation compares (ownership, the slice's Service); others are dropped. Their
keys and values, and namespace names, are interned: an Agent's objects share them."""


@dataclass(frozen=True)
class Watched:
    """One watched kind: whether its watch sends metadata only, and what a record keeps."""

    kind: kinds.Kind
    metadata_only: bool
    keep: Callable[[Mapping[str, Any]], Wire]


def _metadata(obj: Mapping[str, Any], *, generation: bool = False) -> Wire:
    found = obj.get("metadata") or {}
    labels = found.get("labels") or {}
    kept: Wire = {
        "name": found.get("name"),
        "labels": {
            sys.intern(key): sys.intern(value)
            for key, value in labels.items()
            if key in _KEPT_LABELS and isinstance(value, str)
        },
    }
    if isinstance(found.get("namespace"), str):
        kept["namespace"] = sys.intern(found["namespace"])
    if found.get("deletionTimestamp"):
        kept["deletionTimestamp"] = found["deletionTimestamp"]
    if generation and isinstance(found.get("generation"), int):
        kept["generation"] = found["generation"]
    return kept


def metadata_record(obj: Mapping[str, Any]) -> Wire:
    """An object's name, namespace, occ's labels and whether it is being deleted."""
    return {"metadata": _metadata(obj)}


def secret_record(obj: Mapping[str, Any]) -> Wire:
    """``metadata_record`` and the id of the key its credential fingerprint is under."""
    kept = _metadata(obj)
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    key_id = annotations.get(naming.FINGERPRINT_KEY_ANNOTATION)
    if isinstance(key_id, str):
        kept["annotations"] = {naming.FINGERPRINT_KEY_ANNOTATION: sys.intern(key_id)}
    return {"metadata": kept}


def deployment_record(obj: Mapping[str, Any]) -> Wire:
    """A Deployment as kubectl's rollout rule reads it: generation, replicas, the template's
    revision annotation and the rollout status."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    annotations = ((spec.get("template") or {}).get("metadata") or {}).get("annotations") or {}
    revision = annotations.get(naming.REVISION_ANNOTATION)
    template = {"metadata": {"annotations": {naming.REVISION_ANNOTATION: revision}}}
    kept_status = {
        key: status[key]
        for key in ("observedGeneration", "replicas", "updatedReplicas", "availableReplicas")
        if key in status
    }
    kept_status["conditions"] = [
        {"type": condition.get("type"), "reason": condition.get("reason")}
        for condition in status.get("conditions") or ()
        if isinstance(condition, Mapping)
    ]
    return {
        "metadata": _metadata(obj, generation=True),
        "spec": {"replicas": spec.get("replicas"), "template": template},
        "status": kept_status,
    }


def service_record(obj: Mapping[str, Any]) -> Wire:
    """A Service's metadata and the pods it selects."""
    return {
        "metadata": _metadata(obj),
        "spec": {"selector": dict((obj.get("spec") or {}).get("selector") or {})},
    }


def endpoint_slice_record(obj: Mapping[str, Any]) -> Wire:
    """An EndpointSlice's metadata and its endpoints' readiness."""
    endpoints = [
        {
            "conditions": {
                key: value
                for key, value in (endpoint.get("conditions") or {}).items()
                if key in ("ready", "terminating")
            }
        }
        for endpoint in obj.get("endpoints") or ()
        if isinstance(endpoint, Mapping)
    ]
    return {"metadata": _metadata(obj), "endpoints": endpoints}


KINDS: Final = (
    Watched(kinds.NAMESPACE, True, metadata_record),
    Watched(kinds.DEPLOYMENT, False, deployment_record),
    Watched(kinds.SERVICE, False, service_record),
    Watched(kinds.ENDPOINT_SLICE, False, endpoint_slice_record),
    Watched(kinds.CONFIG_MAP, True, metadata_record),
    Watched(kinds.SECRET, True, secret_record),
    Watched(kinds.SERVICE_ACCOUNT, True, metadata_record),
    Watched(kinds.CLAIM, True, metadata_record),
)
"""Every kind the cache watches (preflight checks ``list`` and ``watch`` on each)."""
