"""The HTTP face of the fake Kubernetes API server: dispatch, authentication, faults.

Models the apiserver's request handling: bearer-token authentication (401), RBAC denials
(403), the verbs behind each route (including the Deployment ``scale`` subresource,
``/version`` and ``SelfSubjectAccessReview``) and scripted faults, on a stdlib
``ThreadingHTTPServer`` speaking HTTP/1.1 with keep-alive.
It must not implement object semantics itself: those are the verbs'.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

from tests.support.kube_api import access, errors, faults, patches, resources, routes, verbs

Obj = resources.Obj
Answer = tuple[int, Obj, dict[str, str]]

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def _flag(query: dict[str, list[str]], name: str) -> bool:
    return query.get(name, [""])[-1].lower() == "true"


def _param(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


class Dispatcher:
    """Turns one parsed request into an answer through the verbs."""

    def __init__(self, api_verbs: verbs.Verbs, authorizer: access.Authorizer, token: str) -> None:
        self.verbs = api_verbs
        self.authorizer = authorizer
        self.token = token
        self.server_version = ("1", "34")

    def dispatch(
        self, request: faults.Request, authorization: str | None, user_agent: str
    ) -> Answer:
        if authorization != f"Bearer {self.token}":
            raise errors.ApiError(401, "Unauthorized", "Unauthorized")
        target = routes.route(request.path)
        if target.special == "version":
            return self._version(request.method)
        if target.special == "selfsubjectaccessreview":
            return self._access_review(request.method, request.body)
        assert target.resource is not None
        resource = target.resource
        if _param(request.query, "dryRun"):
            raise errors.bad_request("dryRun is not supported by this fake apiserver")
        verb = self._verb(request.method, target)
        rbac_resource = (
            f"{resource.plural}/{target.subresource}" if target.subresource else (resource.plural)
        )
        self.authorizer.check(verb, rbac_resource, resource.group, target.namespace, target.name)
        manager = _param(request.query, "fieldManager") or user_agent.split("/", 1)[0] or "unknown"
        if target.subresource == "scale":
            return self._scale(request.method, target, request.content_type, request.body, manager)
        if target.name is None:
            return self._collection(request.method, target, request.query, request.body, manager)
        return self._item(
            request.method, target, request.query, request.content_type, request.body, manager
        )

    def _verb(self, method: str, target: routes.Route) -> str:
        if method == "GET":
            return "get" if target.name else "list"
        if method == "DELETE":
            return "delete" if target.name else "deletecollection"
        if method == "POST" and target.name is None:
            return "create"
        if method in ("PUT", "PATCH") and target.name is not None:
            return _VERBS[method]
        raise errors.ApiError(405, "MethodNotAllowed", f"{method} is not supported here")

    def _collection(
        self,
        method: str,
        target: routes.Route,
        query: dict[str, list[str]],
        body: Any,
        manager: str,
    ) -> Answer:
        assert target.resource is not None
        labels, fields = _param(query, "labelSelector"), _param(query, "fieldSelector")
        if method == "GET":
            return 200, self.verbs.list_items(target.resource, target.namespace, labels, fields), {}
        if target.namespace is None and target.resource.namespaced:
            raise errors.ApiError(405, "MethodNotAllowed", f"{method} needs a namespace")
        if method == "POST":
            code, obj = self.verbs.create(target.resource, target.namespace, body, manager)
            return code, obj, {}
        if not target.resource.namespaced:
            raise errors.ApiError(405, "MethodNotAllowed", "namespaces are deleted one by one")
        options = _delete_options(query, body)
        code, obj = self.verbs.delete_collection(
            target.resource, target.namespace, labels, fields, options
        )
        return code, obj, {}

    def _item(
        self,
        method: str,
        target: routes.Route,
        query: dict[str, list[str]],
        content_type: str | None,
        body: Any,
        manager: str,
    ) -> Answer:
        resource, namespace, name = target.resource, target.namespace, target.name
        assert resource is not None and name is not None
        if method == "GET":
            return 200, self.verbs.read(resource, namespace, name), {}
        if method == "PUT":
            if content_type not in (None, "application/json"):
                raise errors.ApiError(415, "UnsupportedMediaType", f"{content_type} is not JSON")
            code, obj = self.verbs.replace(resource, namespace, name, body, manager)
        elif method == "PATCH":
            code, obj = self.verbs.patch(
                resource,
                namespace,
                name,
                body,
                content_type or "",
                field_manager=_param(query, "fieldManager"),
                manager=manager,
                force=_flag(query, "force"),
            )
        else:
            code, obj = self.verbs.delete(resource, namespace, name, _delete_options(query, body))
        return code, obj, {}

    def _scale(
        self, method: str, target: routes.Route, content_type: str | None, body: Any, manager: str
    ) -> Answer:
        assert target.resource is not None and target.name is not None
        if method not in ("GET", "PUT", "PATCH"):
            raise errors.ApiError(405, "MethodNotAllowed", f"{method} is not supported on scale")
        deployment = self.verbs.read(target.resource, target.namespace, target.name)
        if method != "GET":
            current = _scale_of(deployment)
            wanted = (
                body
                if method == "PUT"
                else patches.patched(current, body, content_type or patches.MERGE)
            )
            replicas = (
                (wanted or {}).get("spec", {}).get("replicas") if isinstance(wanted, dict) else None
            )
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid(
                    "Scale",
                    target.name,
                    ["spec.replicas: Invalid value: must be greater than or equal to 0"],
                )
            _, deployment = self.verbs.patch(
                target.resource,
                target.namespace,
                target.name,
                {"spec": {"replicas": replicas}},
                patches.MERGE,
                field_manager=None,
                manager=manager,
                force=False,
            )
        return 200, _scale_of(deployment), {}

    def _version(self, method: str) -> Answer:
        if method != "GET":
            raise errors.ApiError(405, "MethodNotAllowed", "only GET /version")
        major, minor = self.server_version
        return (
            200,
            {
                "major": major,
                "minor": minor,
                "gitVersion": f"v{major}.{minor}.0",
                "gitCommit": "0" * 40,
                "gitTreeState": "clean",
                "buildDate": "2025-01-01T00:00:00Z",
                "goVersion": "go1.24.0",
                "compiler": "gc",
                "platform": "linux/amd64",
            },
            {},
        )

    def _access_review(self, method: str, body: Any) -> Answer:
        if method != "POST" or not isinstance(body, dict):
            raise errors.bad_request("POST a SelfSubjectAccessReview")
        attributes = (body.get("spec") or {}).get("resourceAttributes") or {}
        resource = attributes.get("resource", "")
        if attributes.get("subresource"):
            resource = f"{resource}/{attributes['subresource']}"
        allowed = self.authorizer.allowed(
            attributes.get("verb", ""), resource, attributes.get("namespace") or None
        )
        review = dict(body)
        review.setdefault("apiVersion", "authorization.k8s.io/v1")
        review.setdefault("kind", "SelfSubjectAccessReview")
        review["metadata"] = {}
        review["status"] = (
            {"allowed": allowed}
            if allowed
            else {"allowed": False, "reason": "denied by the test's RBAC rules"}
        )
        return 201, review, {}


def _delete_options(query: dict[str, list[str]], body: Any) -> Obj:
    options: Obj = dict(body) if isinstance(body, dict) else {}
    policy = _param(query, "propagationPolicy")
    if policy is not None:
        options["propagationPolicy"] = policy
    return options


def _scale_of(deployment: Obj) -> Obj:
    metadata = deployment["metadata"]
    match_labels = (deployment["spec"].get("selector") or {}).get("matchLabels") or {}
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            key: metadata[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in metadata
        },
        "spec": {"replicas": deployment["spec"].get("replicas", 1)},
        "status": {
            "replicas": (deployment.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(match_labels.items())),
        },
    }


class KubeHTTPServer(ThreadingHTTPServer):
    """The listening server; handlers reach the dispatcher, faults and journal through it.

    It tracks open connections so that stopping it also cuts keep-alive connections, as an
    apiserver that goes away would (``shutdown`` alone leaves them served).
    """

    daemon_threads = True

    def __init__(
        self,
        dispatcher: Dispatcher,
        scripted: faults.Faults,
        journal: faults.Journal,
        port: int = 0,
    ) -> None:
        self.dispatcher = dispatcher
        self.faults = scripted
        self.journal = journal
        self._connections_lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        super().__init__(("127.0.0.1", port), _Handler)

    def opened(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._connections_lock:
            self._connections.discard(connection)

    def cut_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One write per answer and no Nagle delay: otherwise every keep-alive round trip waits
    # for a delayed ACK between the header and body segments.
    disable_nagle_algorithm = True
    wbufsize = 1 << 16
    server: KubeHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.opened(self.connection)

    def finish(self) -> None:
        self.server.closed(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        return  # the journal is the log; stderr noise would bury test output

    def _serve(self, method: str) -> None:
        split = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(split.query, keep_blank_values=True)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        header = self.headers.get("Content-Type")
        content_type = header.split(";", 1)[0].strip().lower() if header else None
        parse_error: errors.ApiError | None = None
        try:
            body = patches.parse_body(raw, content_type)
        except (ValueError, yaml.YAMLError) as error:
            body, parse_error = None, errors.bad_request(f"the request body is malformed: {error}")
        request = faults.Request(method, split.path, query, content_type, body)
        ticket = self.server.journal.record(request)
        fault = self.server.faults.take(method, split.path)
        if fault is not None and fault.delay_s:
            time.sleep(fault.delay_s)
        if fault is not None and fault.close:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None and fault.status is not None:
            code = fault.status
            injected = errors.ApiError(
                code,
                fault.reason or faults.default_reason(code),
                "injected fault",
                headers={"Retry-After": str(fault.retry_after)} if fault.retry_after else {},
            )
            answer: Answer = (code, injected.status(), injected.headers)
        else:
            answer = self._answer(request, parse_error)
        # Journal first: a client that has read the answer must find it recorded.
        self.server.journal.answered(ticket, answer[0])
        self._send(*answer)

    def _answer(self, request: faults.Request, parse_error: errors.ApiError | None) -> Answer:
        try:
            if parse_error is not None:
                raise parse_error
            return self.server.dispatcher.dispatch(
                request, self.headers.get("Authorization"), self.headers.get("User-Agent") or ""
            )
        except errors.ApiError as error:
            return error.code, error.status(), error.headers
        except Exception as error:  # a bug in the fake: say so loudly, answer like the real 500
            traceback.print_exc(file=sys.stderr)
            failure = errors.ApiError(500, "InternalError", f"fake apiserver bug: {error!r}")
            return 500, failure.status(), {}

    def _send(self, code: int, payload: Obj, headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its read timed out)
