"""The controllers a real cluster runs, reduced to explicit, deterministic steps.

Models the Deployment controller (status after a rollout that succeeded, is still waiting,
or exceeded its progress deadline, plus the Pods it would run, whose containers start with the
log lines a stand-in gateway prints: ``pods``), the EndpointSlice
controller (one slice per selecting Service, labelled with the Service's labels as the real
controller does, endpoints from matching Pods) and the namespace controller (a Terminating
namespace empties, then goes). Nothing happens by itself unless a test asks for it
(``auto_rollout``, ``auto_finish_namespace_deletion``); this module must not answer HTTP or
check requests.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from typing import Any, Literal

from tests.support.kube_api import pod_logs, pods, resources, selectors, store

Obj = resources.Obj
Readiness = bool | Literal["deadline"]

_CONTROLLER = "kube-controller-manager"
_POD_NETWORK = ipaddress.ip_network("10.244.0.0/16")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_RESERVED_SLICE_LABELS = frozenset(
    {
        "kubernetes.io/service-name",
        "endpointslice.kubernetes.io/managed-by",
        "service.kubernetes.io/headless",
    }
)


def _digest(*parts: str, length: int) -> str:
    raw = hashlib.sha256("/".join(parts).encode()).digest()
    return "".join(_SUFFIX_ALPHABET[byte % len(_SUFFIX_ALPHABET)] for byte in raw[:length])


class Simulation:
    """Controller behaviour on top of a store."""

    def __init__(self, objects: store.Store, logs: pod_logs.PodLogs | None = None) -> None:
        self.store = objects
        self.logs = logs if logs is not None else pod_logs.PodLogs()
        self.auto_rollout = False
        self.auto_finish_namespace_deletion = False
        self._pod_ips = _POD_NETWORK.hosts()

    # -- hooks called by the verbs -------------------------------------------------------

    def after_write(self, resource: resources.Resource, old: Obj | None, new: Obj) -> None:
        """React like the controllers would, right after a client's write."""
        namespace = new["metadata"].get("namespace")
        if resource.plural == "deployments" and self.auto_rollout:
            old_generation = (old or {}).get("metadata", {}).get("generation")
            if old_generation != new["metadata"].get("generation"):
                self.mark_rollout(namespace, new["metadata"]["name"], ready=True)
        elif resource.plural in ("services", "pods") and namespace:
            self.sync_endpoint_slices(namespace)

    def after_delete(self, resource: resources.Resource, obj: Obj) -> None:
        """Garbage collection: a Deployment's Pods go with it, and slices follow."""
        namespace = obj["metadata"].get("namespace")
        if resource.plural == "deployments":
            for pod in self._pods_of(obj):
                self.store.remove("pods", namespace, pod["metadata"]["name"])
        if resource.plural in ("deployments", "services", "pods") and namespace:
            self.sync_endpoint_slices(namespace)

    def before_read(self, resource: resources.Resource, name: str) -> None:
        if resource.plural != "namespaces" or not self.auto_finish_namespace_deletion:
            return
        namespace = self.store.get("namespaces", None, name)
        if namespace is not None and namespace["metadata"].get("deletionTimestamp"):
            self.finish_namespace_deletion(name)

    # -- Deployment controller ------------------------------------------------------------

    def mark_rollout(
        self,
        namespace: str,
        name: str,
        ready: Readiness = True,
        *,
        waiting_reason: str = "ContainerCreating",
    ) -> Obj:
        """Give the Deployment the status and Pods of a finished, waiting or stuck rollout."""
        deployments = resources.by_plural("deployments")
        with self.store.lock:
            deployment = self.store.get("deployments", namespace, name)
            if deployment is None:
                raise KeyError(f"no deployment {namespace}/{name}")
            replicas = int(deployment["spec"].get("replicas", 1))
            is_ready = ready is True
            self._replace_pods(deployment, replicas, is_ready, waiting_reason)
            status = _deployment_status(deployment, replicas, ready)
            _keep_condition_times(status, deployment.get("status") or {})
            deployment["status"] = status
            stored = self.store.update(deployments, deployment, _CONTROLLER, "Update")
            self.sync_endpoint_slices(namespace)
            return stored

    def seed_pods(self, namespace: str, name: str) -> None:
        """The ready Pods of the Deployment's finished rollout, and nothing else: a cluster
        seeded in bulk calls ``sync_endpoint_slices`` once per namespace afterwards."""
        with self.store.lock:
            deployment = self.store.get("deployments", namespace, name)
            if deployment is None:
                raise KeyError(f"no deployment {namespace}/{name}")
            replicas = int(deployment["spec"].get("replicas", 1))
            self._replace_pods(deployment, replicas, True, "ContainerCreating")

    def _pods_of(self, deployment: Obj) -> list[Obj]:
        prefix = deployment["metadata"]["name"] + "-"
        selector = deployment.get("spec", {}).get("selector")

        def owned(pod: Obj) -> bool:
            owners = pod["metadata"].get("ownerReferences") or []
            return any(
                owner.get("kind") == "ReplicaSet" and owner.get("name", "").startswith(prefix)
                for owner in owners
            ) and selectors.label_selector_matches(selector, pod["metadata"].get("labels") or {})

        return self.store.items("pods", deployment["metadata"]["namespace"], owned)

    def _replace_pods(
        self, deployment: Obj, replicas: int, ready: bool, waiting_reason: str
    ) -> None:
        namespace = deployment["metadata"]["namespace"]
        template = deployment["spec"]["template"]
        template_hash = _digest(json.dumps(template, sort_keys=True), length=10)
        replica_set = f"{deployment['metadata']['name']}-{template_hash}"
        wanted = {
            f"{replica_set}-{_digest(replica_set, str(i), length=5)}" for i in range(replicas)
        }
        for pod in self._pods_of(deployment):
            if pod["metadata"]["name"] not in wanted:
                self.store.remove("pods", namespace, pod["metadata"]["name"])
        pod_resource = resources.by_plural("pods")
        for pod_name in sorted(wanted):
            existing = self.store.get("pods", namespace, pod_name)
            pod_ip = (existing or {}).get("status", {}).get("podIP") or str(next(self._pod_ips))
            pod = pods.pod(
                template,
                namespace,
                pod_name,
                replica_set,
                _digest(replica_set, length=16),
                template_hash,
                pod_ip,
                ready,
                waiting_reason,
            )
            resources.apply_defaults(pod_resource, pod)
            if existing is None:
                self.store.create(pod_resource, pod, _CONTROLLER, "Update")
                if ready:
                    self._start_containers(pod)
                continue
            if existing["status"].get("containerStatuses") and ready == all(
                status.get("ready") for status in existing["status"]["containerStatuses"]
            ):
                pod["status"]["containerStatuses"] = existing["status"]["containerStatuses"]
            elif ready:
                self._start_containers(pod)
            pod["metadata"] = {**existing["metadata"], **pod["metadata"]}
            self.store.update(pod_resource, pod, _CONTROLLER, "Update")

    def _start_containers(self, pod: Obj) -> None:
        """Each container of the Pod starts: its log is what it prints at start."""
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        spec = pod.get("spec") or {}
        for container in spec.get("containers") or []:
            lines = pods.start_lines(
                container, spec, lambda map_name: self.store.get("configmaps", namespace, map_name)
            )
            self.logs.restart(namespace, name, container.get("name", ""), lines)

    # -- EndpointSlice controller ---------------------------------------------------------

    def sync_endpoint_slices(self, namespace: str) -> None:
        """One slice per selecting Service listing the matching Pods; orphans go."""
        slices = resources.by_plural("endpointslices")
        with self.store.lock:
            wanted: set[str] = set()
            for service in self.store.items("services", namespace):
                selector = service.get("spec", {}).get("selector")
                if not selector:
                    continue
                name = (
                    f"{service['metadata']['name']}-{_digest(service['metadata']['uid'], length=5)}"
                )
                wanted.add(name)
                desired = self._slice(service, name)
                existing = self.store.get("endpointslices", namespace, name)
                if existing is None:
                    self.store.create(slices, desired, "endpointslice-controller", "Update")
                else:
                    desired["metadata"] = {**existing["metadata"], **desired["metadata"]}
                    self.store.update(slices, desired, "endpointslice-controller", "Update")
            for existing in self.store.items("endpointslices", namespace):
                if existing["metadata"]["name"] not in wanted:
                    self.store.remove("endpointslices", namespace, existing["metadata"]["name"])

    def _slice(self, service: Obj, name: str) -> Obj:
        metadata = service["metadata"]
        selector = service["spec"]["selector"]
        pods = [
            pod
            for pod in self.store.items("pods", metadata["namespace"])
            if all((pod["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
            and pod.get("status", {}).get("podIP")
        ]
        endpoints = [_endpoint(pod) for pod in pods]
        ports = [_slice_port(port, pods) for port in service["spec"].get("ports") or []]
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": name,
                "namespace": metadata["namespace"],
                "labels": {
                    # the controller copies the Service's labels (but its reserved ones)
                    **{
                        key: value
                        for key, value in (metadata.get("labels") or {}).items()
                        if key not in _RESERVED_SLICE_LABELS
                    },
                    "kubernetes.io/service-name": metadata["name"],
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                },
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "name": metadata["name"],
                        "uid": metadata["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        }

    # -- namespace controller -------------------------------------------------------------

    def finish_namespace_deletion(self, name: str) -> None:
        """Delete everything in the Terminating namespace ``name``, then the namespace."""
        with self.store.lock:
            namespace = self.store.get("namespaces", None, name)
            if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
                raise ValueError(f"namespace {name!r} is not terminating")
            for plural, namespace_name, object_name in list(self.store.keys_in_namespace(name)):
                self.store.remove(plural, namespace_name, object_name)
            self.store.remove("namespaces", None, name)


def _deployment_status(deployment: Obj, replicas: int, ready: Readiness) -> Obj:
    """Deployment status as the controller writes it; zero counts are omitted like the real one."""
    generation = deployment["metadata"]["generation"]
    counts: dict[str, int] = {"replicas": replicas, "updatedReplicas": replicas}
    if ready is True:
        counts |= {"readyReplicas": replicas, "availableReplicas": replicas}
    else:
        counts["unavailableReplicas"] = replicas
    now = store.now()
    available = ready is True or replicas == 0
    if ready == "deadline":
        progressing = (
            "False",
            "ProgressDeadlineExceeded",
            f'ReplicaSet "{deployment["metadata"]["name"]}" has timed out progressing.',
        )
    elif ready is True:
        progressing = (
            "True",
            "NewReplicaSetAvailable",
            f'ReplicaSet "{deployment["metadata"]["name"]}" has successfully progressed.',
        )
    else:
        progressing = (
            "True",
            "ReplicaSetUpdated",
            f'ReplicaSet "{deployment["metadata"]["name"]}" is progressing.',
        )
    conditions: list[dict[str, Any]] = [
        {
            "type": "Available",
            "status": "True" if available else "False",
            "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            "message": "Deployment has minimum availability."
            if available
            else "Deployment does not have minimum availability.",
            "lastUpdateTime": now,
            "lastTransitionTime": now,
        },
        {
            "type": "Progressing",
            "status": progressing[0],
            "reason": progressing[1],
            "message": progressing[2],
            "lastUpdateTime": now,
            "lastTransitionTime": now,
        },
    ]
    status: Obj = {"observedGeneration": generation, "conditions": conditions}
    status |= {key: value for key, value in counts.items() if value}
    return status


def _keep_condition_times(status: Obj, previous: Obj) -> None:
    """A condition that did not change keeps its times, so a repeated rollout is a no-op."""
    before = {condition.get("type"): condition for condition in previous.get("conditions") or []}
    for condition in status["conditions"]:
        old = before.get(condition["type"])
        if old and (old.get("status"), old.get("reason")) == (
            condition["status"],
            condition["reason"],
        ):
            condition["lastUpdateTime"] = old.get("lastUpdateTime", condition["lastUpdateTime"])
            condition["lastTransitionTime"] = old.get(
                "lastTransitionTime", condition["lastTransitionTime"]
            )


def _endpoint(pod: Obj) -> Obj:
    conditions = pod.get("status", {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return {
        "addresses": [pod["status"]["podIP"]],
        "conditions": {"ready": ready, "serving": ready, "terminating": False},
        "targetRef": {
            "kind": "Pod",
            "namespace": pod["metadata"]["namespace"],
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"],
        },
    }


def _slice_port(port: Obj, pods: list[Obj]) -> Obj:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, str):
        named = [
            container_port.get("containerPort")
            for pod in pods
            for container in pod["spec"].get("containers") or []
            for container_port in container.get("ports") or []
            if container_port.get("name") == target
        ]
        target = named[0] if named else port.get("port")
    return {"name": port.get("name", ""), "port": target, "protocol": port.get("protocol", "TCP")}
