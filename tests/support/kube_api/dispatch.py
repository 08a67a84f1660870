"""The request side of the fake Kubernetes API server: from a parsed request to an answer.

Models the apiserver's request handling: bearer-token authentication (401), RBAC denials
(403), the verb behind each route (``watch`` for a collection GET with ``watch=true``,
including the Deployment ``scale`` subresource, a Pod's ``log`` (``pod_logs``), ``/version`` and
``SelfSubjectAccessReview``). A watch is answered with what to stream (``watches.Watch``);
everything else with (code, body, headers). It must not speak HTTP or implement object
semantics itself: those are the server's and the verbs'.
"""

from __future__ import annotations

from typing import Any

from tests.support.kube_api import (
    access,
    errors,
    faults,
    listing,
    patches,
    pod_logs,
    resources,
    routes,
    verbs,
    watches,
)

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

    def __init__(
        self,
        api_verbs: verbs.Verbs,
        authorizer: access.Authorizer,
        token: str,
        logs: pod_logs.PodLogs | None = None,
    ) -> None:
        self.verbs = api_verbs
        self.logs = logs if logs is not None else pod_logs.PodLogs()
        self.authorizer = authorizer
        self.token = token
        self.server_version = ("1", "34")

    def dispatch(
        self,
        request: faults.Request,
        authorization: str | None,
        user_agent: str,
        accept: str | None = None,
    ) -> Answer | watches.Watch | pod_logs.Read:
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
        watching = request.method == "GET" and target.name is None and _flag(request.query, "watch")
        verb = "watch" if watching else self._verb(request.method, target)
        rbac_resource = (
            f"{resource.plural}/{target.subresource}" if target.subresource else (resource.plural)
        )
        # a request on a namespace object is in that namespace (the apiserver's request info)
        rbac_namespace = (
            target.name if resource.plural == "namespaces" and target.name else target.namespace
        )
        self.authorizer.check(verb, rbac_resource, resource.group, rbac_namespace, target.name)
        manager = _param(request.query, "fieldManager") or user_agent.split("/", 1)[0] or "unknown"
        if watching:
            return watches.request(resource, target.namespace, request.query, accept)
        if target.subresource == "log":
            if request.method != "GET":
                raise errors.ApiError(405, "MethodNotAllowed", f"{request.method} on a log")
            return self.logs.request(
                self.verbs.read(resource, target.namespace, target.name or ""), request.query
            )
        if target.subresource == "scale":
            return self._scale(request.method, target, request.content_type, request.body, manager)
        if target.name is None:
            return self._collection(
                request.method, target, request.query, request.body, manager, accept
            )
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
        accept: str | None,
    ) -> Answer:
        assert target.resource is not None
        labels, fields = _param(query, "labelSelector"), _param(query, "fieldSelector")
        if method == "GET":
            listed = self.verbs.list_items(
                target.resource,
                target.namespace,
                labels,
                fields,
                limit=_limit(query),
                token=_param(query, "continue"),
                metadata=listing.metadata_only(accept, watch=False),
            )
            return 200, listed, {}
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
            attributes.get("verb", ""),
            resource,
            attributes.get("namespace") or None,
            attributes.get("group") or "",
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


def _limit(query: dict[str, list[str]]) -> int | None:
    raw = _param(query, "limit")
    try:
        return int(raw) if raw else None
    except ValueError:
        raise errors.bad_request(f"limit must be an integer, not {raw!r}") from None


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
