"""The kinds the fake Kubernetes API server serves, and the fields the server fills in.

Models the apiserver's type registry (plural, kind, group/version, scope) and its defaulting:
the fields a real server adds to every written object, so that the v37 client (which
validates responses with pydantic) always reads complete objects. It must not store
objects or decide about requests.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

SYSTEM_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)


@dataclass(frozen=True)
class Resource:
    """One served kind."""

    plural: str
    kind: str
    group: str = ""
    version: str = "v1"
    namespaced: bool = True
    has_spec: bool = True
    read_only: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def prefix(self) -> str:
        """The URL prefix of the group version: ``/api/v1`` or ``/apis/<group>/<version>``."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


RESOURCES: dict[str, Resource] = {
    resource.plural: resource
    for resource in (
        Resource("namespaces", "Namespace", namespaced=False, has_spec=False),
        Resource("serviceaccounts", "ServiceAccount", has_spec=False),
        Resource("configmaps", "ConfigMap", has_spec=False),
        Resource("secrets", "Secret", has_spec=False),
        Resource("services", "Service"),
        Resource("persistentvolumeclaims", "PersistentVolumeClaim"),
        Resource("pods", "Pod"),
        Resource("resourcequotas", "ResourceQuota"),
        Resource("limitranges", "LimitRange"),
        Resource("deployments", "Deployment", group="apps"),
        Resource("networkpolicies", "NetworkPolicy", group="networking.k8s.io"),
        Resource(
            "endpointslices",
            "EndpointSlice",
            group="discovery.k8s.io",
            has_spec=False,
            read_only=True,
        ),
    )
}


def by_plural(plural: str) -> Resource:
    """The served kind named ``plural``; a ``KeyError`` names the unknown plural."""
    try:
        return RESOURCES[plural]
    except KeyError:
        raise KeyError(f"the fake serves no resource {plural!r}") from None


def lookup(group: str, version: str, plural: str) -> Resource | None:
    """The kind served under ``group``/``version`` as ``plural``, if any."""
    resource = RESOURCES.get(plural)
    if resource is None or resource.group != group or resource.version != version:
        return None
    return resource


def apply_defaults(resource: Resource, obj: Obj) -> None:
    """Fill the fields the real apiserver defaults, in place (idempotent)."""
    spec = obj.get("spec")
    if resource.plural == "deployments" and isinstance(spec, dict):
        _default_deployment(spec)
    elif resource.plural == "services" and isinstance(spec, dict):
        _default_service(spec)
    elif resource.plural == "persistentvolumeclaims" and isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
    elif resource.plural == "secrets":
        obj.setdefault("type", "Opaque")
    elif resource.plural == "namespaces":
        name = obj.get("metadata", {}).get("name")
        if isinstance(name, str):
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    if isinstance(spec, dict) and isinstance(spec.get("template"), dict):
        pod_spec = spec["template"].get("spec")
        if isinstance(pod_spec, dict):
            _default_pod_spec(pod_spec)
    if resource.plural == "pods" and isinstance(spec, dict):
        _default_pod_spec(spec)


def initial_status(resource: Resource) -> Obj | None:
    """The status a freshly created object has before any controller acts on it."""
    if resource.plural == "namespaces":
        return {"phase": "Active"}
    if resource.plural == "persistentvolumeclaims":
        return {"phase": "Pending"}
    if resource.plural == "services":
        return {"loadBalancer": {}}
    if resource.plural == "pods":
        return {"phase": "Pending"}
    if resource.plural == "deployments":
        return {}
    return None


def _default_deployment(spec: Obj) -> None:
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")


def _default_service(spec: Obj) -> None:
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])


def _default_pod_spec(pod_spec: Obj) -> None:
    pod_spec.setdefault("restartPolicy", "Always")
    pod_spec.setdefault("terminationGracePeriodSeconds", 30)
    pod_spec.setdefault("dnsPolicy", "ClusterFirst")
    pod_spec.setdefault("schedulerName", "default-scheduler")
    pod_spec.setdefault("securityContext", {})
    for container in pod_spec.get("containers") or []:
        if isinstance(container, dict):
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
            container.setdefault("imagePullPolicy", _pull_policy(container.get("image")))


def _pull_policy(image: object) -> str:
    """``Always`` for an untagged or ``:latest`` image, else ``IfNotPresent`` (the default)."""
    if not isinstance(image, str) or "@" in image:
        return "IfNotPresent"
    last_segment = image.rsplit("/", 1)[-1]
    untagged = ":" not in last_segment or last_segment.endswith(":latest")
    return "Always" if untagged else "IfNotPresent"


def carry_server_fields(resource: Resource, old: Obj, new: Obj) -> None:
    """What a write cannot change: system metadata, status, the allocated clusterIP."""
    metadata = new["metadata"]
    for field in SYSTEM_METADATA:
        if field in old["metadata"]:
            metadata[field] = copy.deepcopy(old["metadata"][field])
        else:
            metadata.pop(field, None)
    if "status" in old:
        new["status"] = copy.deepcopy(old["status"])
    else:
        new.pop("status", None)
    fold_string_data(resource, new)
    apply_defaults(resource, new)
    if resource.plural == "services":
        old_spec = old.get("spec") or {}
        spec = new.setdefault("spec", {})
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = copy.deepcopy(old_spec["clusterIPs"])


def fold_string_data(resource: Resource, obj: Obj) -> None:
    """A Secret's ``stringData`` is write-only: it lands base64-encoded in ``data``."""
    if resource.plural != "secrets" or not isinstance(obj.get("stringData"), dict):
        return
    data = obj.setdefault("data", {})
    for key, value in obj.pop("stringData").items():
        data[key] = base64.b64encode(str(value).encode()).decode()
