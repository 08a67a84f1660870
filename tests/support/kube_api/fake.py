"""``FakeKubeAPI``: the fake Kubernetes API server a test starts, drives and inspects.

Puts the store, the simulated controllers, the verbs, RBAC, faults and the HTTP server
together on ``127.0.0.1:<ephemeral port>`` in a daemon thread, and offers the test hooks:
reading objects directly, objects put straight into the store (``seed``), changes and
deletions behind the client's back, rollouts, namespace termination, watches cut or their
history compacted, fault scripts, denials, RBAC restricted to given roles and the request
journal. It must not be used outside tests; nothing here talks to a real cluster.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.support.kube_api import (
    access,
    dispatch,
    errors,
    faults,
    history,
    pod_logs,
    resources,
    selectors,
    server,
    simulation,
    store,
    verbs,
)

Obj = resources.Obj
_SOMEONE_ELSE = "someone-else"


class FakeKubeAPI:
    """An in-process apiserver for the real ``kubernetes`` client (see the module docstring)."""

    def __init__(
        self,
        *,
        validate: bool = True,
        schema_version: str = "1.34",
        token: str = "test-token",
        history_limit: int = history.DEFAULT_LIMIT,
    ) -> None:
        self.token = token
        self._store = store.Store(history_limit)
        self._logs = pod_logs.PodLogs()
        self.simulation = simulation.Simulation(self._store, self._logs)
        self._verbs = verbs.Verbs(
            self._store, self.simulation, validate=validate, schema_version=schema_version
        )
        self._authorizer = access.Authorizer()
        self._faults = faults.Faults()
        self._journal = faults.Journal()
        self._dispatcher = dispatch.Dispatcher(self._verbs, self._authorizer, token, self._logs)
        self._http: server.KubeHTTPServer | None = None
        self._bookmark_interval_s: float | None = None
        self._port = 0  # kept after stop(), so a restarted server is at the same URL
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeKubeAPI:
        """Listen on 127.0.0.1: a free port the first time, the same one after a stop."""
        if self._http is not None:
            raise RuntimeError("the fake apiserver is already running")
        self._http = server.KubeHTTPServer(
            self._dispatcher, self._store, self._faults, self._journal, self._port
        )
        self._http.bookmark_interval_s = self._bookmark_interval_s
        self._port = self._http.server_port
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-kube-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering: the port closes and open connections are cut (objects stay)."""
        if self._http is None:
            return
        self._http.shutdown()
        self._http.server_close()
        self._http.cut_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._http = None
        self._thread = None

    def __enter__(self) -> FakeKubeAPI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._http is None:
            raise RuntimeError("the fake apiserver is not running")
        return f"http://127.0.0.1:{self._http.server_port}"

    def reset(self) -> None:
        """Back to an empty cluster: objects, journal, faults, denials, failures, switches; open
        watches are cut."""
        self.cut_watches()
        self._store.clear()
        self._journal.clear()
        self._faults.clear()
        self._logs.clear()
        self._authorizer.clear()
        self._verbs.clear_validation_failures()
        self.simulation.auto_rollout = False
        self.simulation.auto_finish_namespace_deletion = False
        self._dispatcher.server_version = ("1", "34")
        self.bookmark_interval_s = None

    # -- client configuration -------------------------------------------------------------

    def kubeconfig_dict(self, token: str | None = None, context: str = "fake") -> dict[str, Any]:
        """A kubeconfig for ``kubernetes.config.new_client_from_config_dict``."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": {"token": self.token if token is None else token}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
            "current-context": context,
        }

    def write_kubeconfig(self, path: Path | str, token: str | None = None) -> Path:
        target = Path(path)
        target.write_text(json.dumps(self.kubeconfig_dict(token), indent=2))  # JSON is YAML
        target.chmod(0o600)
        return target

    # -- switches -------------------------------------------------------------------------

    @property
    def bookmark_interval_s(self) -> float | None:
        """How often a watch that allows bookmarks gets one (``None``: only as it times out)."""
        return self._bookmark_interval_s

    @bookmark_interval_s.setter
    def bookmark_interval_s(self, value: float | None) -> None:
        self._bookmark_interval_s = value
        if self._http is not None:
            self._http.bookmark_interval_s = value

    @property
    def server_version(self) -> tuple[str, str]:
        return self._dispatcher.server_version

    @server_version.setter
    def server_version(self, value: tuple[str, str]) -> None:
        self._dispatcher.server_version = value

    # -- inspection -----------------------------------------------------------------------

    def get(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        return self._store.get(resources.by_plural(plural).plural, namespace, name)

    def existing(self, plural: str, namespace: str | None, name: str) -> Obj:
        """``get`` for an object the test knows is there (an AssertionError when it is not)."""
        obj = self.get(plural, namespace, name)
        assert obj is not None, f"no {plural} {name!r} in {namespace!r}"
        return obj

    def objects(
        self, plural: str, namespace: str | None = None, label_selector: str | None = None
    ) -> list[Obj]:
        matches = selectors.parse_label_selector(label_selector)
        return self._store.items(
            resources.by_plural(plural).plural,
            namespace,
            lambda obj: matches(obj["metadata"].get("labels") or {}),
        )

    @property
    def resource_version(self) -> int:
        """The newest resourceVersion handed out."""
        return self._store.version

    @property
    def validation_errors(self) -> list[verbs.ValidationFailure]:
        return self._verbs.validation_failures

    @property
    def journal(self) -> list[faults.Request]:
        return self._journal.entries()

    def clear_journal(self) -> None:
        self._journal.clear()

    # -- behind the client's back ---------------------------------------------------------

    def edit(
        self, plural: str, namespace: str | None, name: str, mutate: Callable[[Obj], None]
    ) -> Obj:
        """Someone else changes the object: versions move as for any write."""
        resource = resources.by_plural(plural)
        with self._store.lock:
            old = self._require(resource, namespace, name)
            new = copy.deepcopy(old)
            mutate(new)
            return self._verbs.write_behind_back(resource, old, new, _SOMEONE_ELSE)

    def seed(self, plural: str, body: Obj) -> Obj:
        """Put an object straight into the store as the cluster would hold it (server
        defaults filled, ``status`` kept as given), without validation, RBAC or controllers:
        a large cluster built quickly. A watch sees it as ``ADDED``."""
        resource = resources.by_plural(plural)
        obj = copy.deepcopy(body)
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        resources.apply_defaults(resource, obj)
        return self._store.create(resource, obj, _SOMEONE_ELSE, "Update")

    def write_log(self, namespace: str, pod: str, line: str, container: str = "gateway") -> None:
        """The container of the Pod writes ``line`` to its log (followers get it at once)."""
        self._logs.write(namespace, pod, container, line)

    def restart_container(
        self, namespace: str, pod: str, lines: list[str], container: str = "gateway"
    ) -> None:
        """The container of the Pod starts again and prints ``lines`` (its log is them alone)."""
        self._logs.restart(namespace, pod, container, lines)

    def create_foreign(self, plural: str, namespace: str | None, body: Obj) -> Obj:
        """Someone else creates an object (as through the API, so it is complete and valid)."""
        resource = resources.by_plural(plural)
        _, created = self._verbs.create(resource, namespace, copy.deepcopy(body), _SOMEONE_ELSE)
        return created

    def remove(self, plural: str, namespace: str | None, name: str) -> None:
        """Someone else deletes the object at once (finalizers ignored, contents included)."""
        resource = resources.by_plural(plural)
        with self._store.lock:
            obj = self._require(resource, namespace, name)
            if resource.plural == "namespaces":
                for key in list(self._store.keys_in_namespace(name)):
                    self._store.remove(*key)
            self._store.remove(resource.plural, namespace, name)
            self.simulation.after_delete(resource, obj)

    def mark_rollout(
        self,
        namespace: str,
        deployment_name: str,
        ready: simulation.Readiness = True,
        *,
        waiting_reason: str = "ContainerCreating",
    ) -> Obj:
        """The Deployment controller finished (True), is waiting (False) or gave up
        ("deadline"); Pods and EndpointSlices follow."""
        return self.simulation.mark_rollout(
            namespace, deployment_name, ready, waiting_reason=waiting_reason
        )

    def seed_rollout(self, namespace: str, deployment_name: str) -> None:
        """The ready Pods of a seeded Deployment's finished rollout; call
        ``seed_endpoint_slices`` once the namespace's Services and Pods are all seeded."""
        self.simulation.seed_pods(namespace, deployment_name)

    def seed_endpoint_slices(self, namespace: str) -> None:
        """The EndpointSlice controller's slices for a namespace seeded in bulk."""
        self.simulation.sync_endpoint_slices(namespace)

    def finish_namespace_deletion(self, name: str) -> None:
        self.simulation.finish_namespace_deletion(name)

    # -- misbehaviour ---------------------------------------------------------------------

    def cut_watches(self) -> int:
        """Break every connection streaming a watch now (the server keeps answering); how
        many there were."""
        return self._http.cut_watches() if self._http is not None else 0

    def compact(self) -> int:
        """Forget the change history up to now, as etcd's compaction does: a watch or a
        continued list from an earlier resourceVersion is answered 410 ``Expired``. The
        newest version, from which watches may still start."""
        with self._store.lock:
            self._store.history.compact(self._store.version)
            return self._store.version

    def inject(
        self,
        method: str,
        path_pattern: str,
        *,
        status: int | None = None,
        times: int = 1,
        retry_after: int | None = None,
        delay_s: float | None = None,
        close: bool = False,
        reason: str | None = None,
    ) -> None:
        """Script the next ``times`` requests matching ``method`` (or ``*``) and the regex."""
        self._faults.add(
            faults.Fault(method, path_pattern, status, retry_after, delay_s, close, reason), times
        )

    def deny(self, verb: str, resource: str, namespace: str | None = None) -> None:
        self._authorizer.deny(verb, resource, namespace)

    def grant_only(self, documents: Iterable[Obj]) -> None:
        """Restrict the user to the rules of the Roles and ClusterRoles that the bindings
        among ``documents`` bind (RBAC enforcement; ``reset`` lifts it)."""
        self._authorizer.grant_only(access.grants(documents))

    def _require(self, resource: resources.Resource, namespace: str | None, name: str) -> Obj:
        obj = self._store.get(resource.plural, namespace, name)
        if obj is None:
            raise errors.not_found(resource.plural, name, resource.group)
        return obj
