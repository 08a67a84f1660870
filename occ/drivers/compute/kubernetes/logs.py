"""The ``kubernetes`` driver's runtime logs: the revision's gateway Pod log, read-only.

The Pod is the newest gateway Pod of the Agent whose template names the revision (its
``occ.dev/revision-id`` annotation or label); the log is the ``gateway`` container's, read
with the Pod log API (``tailLines``, ``sinceSeconds``, ``follow``). A follow is a read with a
timeout of what is left of its time, and a timer closes it at the deadline. ``head`` reads the
start of a log (``limitBytes``): where the gateway printed its startup warnings.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import socket
import threading
from collections.abc import Iterator
from typing import Any, Final

import urllib3
from kubernetes import client as k8s

from occ.drivers.compute import runtime_logs
from occ.drivers.compute.kubernetes import (
    client,
    cluster_config,
    configured,
    failures,
    kinds,
    namespaces,
    naming,
)
from occ.settings.config import Settings

PODS: Final = kinds.POD
CONTAINER: Final = "gateway"
"""The gateway Pod's container whose log is read."""
_CHUNK: Final = 16 * 1024


class KubernetesLogs:
    """Reads gateway Pod logs through the Kubernetes API."""

    def __init__(self, api: client.KubernetesApi, policy: namespaces.Policy) -> None:
        self.api = api
        self.policy = policy

    @classmethod
    def from_settings(cls, settings: Settings) -> KubernetesLogs:
        configuration = cluster_config.load_configuration(
            settings.kubernetes_kubeconfig, settings.kubernetes_context
        )
        api = client.KubernetesApi(
            configuration, timeout_s=settings.kubernetes_request_timeout_ms / 1000
        )
        return cls(api, configured.namespace_policy(settings))

    def pod(self, target: runtime_logs.LogTarget) -> tuple[str, str]:
        """The namespace and name of the revision's newest gateway Pod."""
        namespace = namespaces.find(self.api, self.policy, target.namespace_id)
        if namespace is None:
            raise runtime_logs.unavailable("the Namespace's Kubernetes namespace is gone")
        selector = naming.selector(
            {naming.AGENT_ID: target.agent_id, naming.ROLE: naming.Role.GATEWAY}
        )
        pods = [
            pod
            for pod in self.api.find(PODS, namespace, selector)
            if _revision_of(pod) == target.revision_id
        ]
        if not pods:
            raise runtime_logs.unavailable("the revision has no gateway Pod")
        newest = max(pods, key=lambda pod: str(pod["metadata"].get("creationTimestamp") or ""))
        return namespace, str(newest["metadata"]["name"])

    def read_logs(
        self, target: runtime_logs.LogTarget, query: runtime_logs.LogQuery
    ) -> runtime_logs.LogLines:
        namespace, pod = self.pod(target)
        options: dict[str, Any] = {
            "container": CONTAINER,
            "follow": query.follow,
            "_preload_content": False,
            "_request_timeout": (
                self.api.timeout_s,
                self.api.timeout_s + (query.follow_s if query.follow else 0.0),
            ),
        }
        if query.tail is not None:
            options["tail_lines"] = query.tail
        if query.since is not None:
            elapsed = (dt.datetime.now(dt.UTC) - query.since).total_seconds()
            options["since_seconds"] = max(math.ceil(elapsed), 1)
        core: Any = k8s.CoreV1Api(k8s.ApiClient(self.api.configuration))
        try:
            response = core.read_namespaced_pod_log(pod, namespace, **options)
        except k8s.ApiException as exc:
            if exc.status == 404:
                raise runtime_logs.unavailable("the revision's gateway Pod is gone") from None
            raise failures.answered("read pod log", exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise failures.unanswered("read pod log", exc) from None
        closed = threading.Event()

        def close() -> None:
            if closed.is_set():
                return
            closed.set()
            # a read blocked in another thread ends only when its socket is shut down
            sock = getattr(getattr(response, "connection", None), "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            response.close()

        def chunks() -> Iterator[bytes]:
            # a read failing is the stream closed at the deadline, or cut: the end
            with contextlib.suppress(Exception):
                yield from response.stream(_CHUNK, decode_content=True)

        # a line the Pod log API left unterminated is the one the deadline cut: dropped
        return runtime_logs.streamed(
            chunks(), close, query, unterminated_last_line=False, release=response.release_conn
        )


def head(api: client.KubernetesApi, namespace: str, pod: str, *, limit_bytes: int) -> bytes | None:
    """The first ``limit_bytes`` of the gateway container's log; ``None`` when it cannot be
    read yet: the Pod is gone (404) or its container has not started (400)."""
    if api.limiter is not None:
        api.limiter.acquire()
    with k8s.ApiClient(api.configuration) as pool:
        core: Any = k8s.CoreV1Api(pool)
        try:
            response = core.read_namespaced_pod_log(
                pod,
                namespace,
                container=CONTAINER,
                limit_bytes=limit_bytes,
                _preload_content=False,  # raw bytes: a JSON line must not be parsed as a model
                _request_timeout=api.timeout_s,
            )
            read = b""
            try:
                for chunk in response.stream(_CHUNK, decode_content=True):
                    read += chunk
                    if len(read) >= limit_bytes:
                        break
            finally:
                response.release_conn()
            return read[:limit_bytes]
        except k8s.ApiException as exc:
            if exc.status in (400, 404):
                return None
            raise failures.answered("read pod log", exc) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise failures.unanswered("read pod log", exc) from None


def _revision_of(pod: dict[str, Any]) -> str | None:
    metadata = pod.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    found = annotations.get(naming.REVISION_ANNOTATION) or labels.get(naming.REVISION_ID)
    return str(found) if found else None
