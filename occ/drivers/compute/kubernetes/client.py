"""The ``kubernetes`` driver's only door to the cluster: the official client, typed methods.

It builds a Kubernetes ``Configuration`` from settings (an explicit kubeconfig and context;
unset: in-cluster configuration when available, else the default kubeconfig), calls the typed
API methods with a per-request timeout, hands back objects in wire form (camelCase dicts),
and translates every failure into ``TransientDriverError`` or ``PermanentDriverError`` with a
bounded Kubernetes ``reason``. It never logs or raises a request or response body (a Secret's
body holds a credential), and it knows nothing of occ's objects or naming.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import pydantic
import urllib3
from kubernetes import client as k8s
from kubernetes import config as _k8s_config

from occ.drivers.compute import base
from occ.telemetry import observability

FIELD_MANAGER: Final = "occ"
APPLY: Final = "application/apply-patch+yaml"
MERGE: Final = "application/merge-patch+json"
MAX_REASON: Final = 64
"""Characters kept of a Kubernetes Status ``reason`` (it is a CamelCase word)."""

UNAVAILABLE: Final = "KUBERNETES_API_UNAVAILABLE"
THROTTLED: Final = "KUBERNETES_THROTTLED"
CONFLICT: Final = "KUBERNETES_CONFLICT"
FORBIDDEN: Final = "KUBERNETES_FORBIDDEN"
INVALID: Final = "KUBERNETES_REQUEST_INVALID"
MISSING: Final = "KUBERNETES_OBJECT_MISSING"
TERMINATING: Final = "KUBERNETES_NAMESPACE_TERMINATING"
SETTINGS_INVALID: Final = "KUBERNETES_SETTINGS_INVALID"
RESPONSE_INVALID: Final = "KUBERNETES_RESPONSE_INVALID"

Wire = dict[str, Any]


class Throttled(base.TransientDriverError):
    """HTTP 429: ``retry_after_s`` is the server's ``Retry-After`` (``None`` without one)."""

    def __init__(self, reason: str, retry_after_s: float | None) -> None:
        super().__init__(THROTTLED, reason)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Kind:
    """One object kind: where its typed methods live and how RBAC names it."""

    kind: str
    api: str
    suffix: str
    plural: str
    group: str = ""
    namespaced: bool = True


NAMESPACE: Final = Kind("Namespace", "CoreV1Api", "namespace", "namespaces", namespaced=False)
CONFIG_MAP: Final = Kind("ConfigMap", "CoreV1Api", "config_map", "configmaps")
SECRET: Final = Kind("Secret", "CoreV1Api", "secret", "secrets")
SERVICE_ACCOUNT: Final = Kind("ServiceAccount", "CoreV1Api", "service_account", "serviceaccounts")
SERVICE: Final = Kind("Service", "CoreV1Api", "service", "services")
CLAIM: Final = Kind(
    "PersistentVolumeClaim", "CoreV1Api", "persistent_volume_claim", "persistentvolumeclaims"
)
QUOTA: Final = Kind("ResourceQuota", "CoreV1Api", "resource_quota", "resourcequotas")
LIMITS: Final = Kind("LimitRange", "CoreV1Api", "limit_range", "limitranges")
DEPLOYMENT: Final = Kind("Deployment", "AppsV1Api", "deployment", "deployments", "apps")
NETWORK_POLICY: Final = Kind(
    "NetworkPolicy", "NetworkingV1Api", "network_policy", "networkpolicies", "networking.k8s.io"
)
ENDPOINT_SLICE: Final = Kind(
    "EndpointSlice", "DiscoveryV1Api", "endpoint_slice", "endpointslices", "discovery.k8s.io"
)


k8s_config: Any = _k8s_config
"""The client's config loaders (untyped upstream)."""


def load_configuration(kubeconfig: str | None, context: str | None) -> k8s.Configuration:
    """The client configuration for these settings; ``PermanentDriverError`` when unusable."""
    configuration = k8s.Configuration()
    try:
        if kubeconfig:
            k8s_config.load_kube_config(
                config_file=kubeconfig,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        else:
            try:
                k8s_config.load_incluster_config(client_configuration=configuration)
            except k8s_config.ConfigException:
                k8s_config.load_kube_config(
                    context=context, client_configuration=configuration, persist_config=False
                )
    except (k8s_config.ConfigException, OSError, ValueError, TypeError) as exc:
        raise base.PermanentDriverError(
            SETTINGS_INVALID,
            f"the Kubernetes client configuration is unusable ({type(exc).__name__})",
        ) from None
    # One quick reconnect; the work queue owns every higher-level retry and its backoff.
    configuration.retries = urllib3.Retry(total=1, connect=1, read=0, status=0, redirect=0)
    return configuration


class KubernetesApi:
    """Typed calls on one cluster; each returns wire-form objects or raises a driver error.

    The HTTP pool is created lazily in the calling process (a pool must not cross a fork).
    """

    def __init__(self, configuration: k8s.Configuration, *, timeout_s: float) -> None:
        self.configuration = configuration
        self.timeout_s = float(timeout_s)
        self._client: k8s.ApiClient | None = None
        self._pid = 0
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        return str(self.configuration.host)

    def _api(self, kind: Kind) -> Any:
        return getattr(k8s, kind.api)(self._api_client())

    def _api_client(self) -> k8s.ApiClient:
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                self._client = k8s.ApiClient(self.configuration)
                self._pid = os.getpid()
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None and self._pid == os.getpid():
                closing: Any = self._client
                closing.close()
            self._client = None

    def _wire(self, model: Any) -> Wire:
        api_client: Any = self._api_client()
        wire = api_client.sanitize_for_serialization(model)
        return wire if isinstance(wire, dict) else {}

    def _method(self, verb: str, kind: Kind) -> Callable[..., Any]:
        scope = "namespaced_" if kind.namespaced else ""
        method: Callable[..., Any] = getattr(self._api(kind), f"{verb}_{scope}{kind.suffix}")
        return method

    @staticmethod
    def _where(kind: Kind, namespace: str | None) -> dict[str, Any]:
        return {"namespace": namespace} if kind.namespaced else {}

    # -- object verbs -------------------------------------------------------------------

    def read(self, kind: Kind, namespace: str | None, name: str) -> Wire | None:
        """The object, or ``None`` when it does not exist."""
        model = self._on_objects("read", kind, namespace, name, missing_ok=True)
        return None if model is None else self._wire(model)

    def find(self, kind: Kind, namespace: str | None, selector: str) -> list[Wire]:
        """The objects matching the label selector ``selector``."""
        result = self._on_objects("list", kind, namespace, label_selector=selector)
        return [self._wire(item) for item in (result.items or [])]

    def create(self, kind: Kind, namespace: str | None, body: Mapping[str, Any]) -> Wire | None:
        """Create the object; ``None`` when one with that name already exists."""
        model = self._on_objects(
            "create",
            kind,
            namespace,
            body=dict(body),
            field_manager=FIELD_MANAGER,
            exists_ok=True,
        )
        return None if model is None else self._wire(model)

    def apply(self, kind: Kind, namespace: str | None, body: Mapping[str, Any]) -> Wire:
        """Server-side apply of the whole desired object (occ's field manager, forced)."""
        model = self._on_objects(
            "patch",
            kind,
            namespace,
            body["metadata"]["name"],
            label="apply",
            body=dict(body),
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type=APPLY,
        )
        return self._wire(model)

    def merge_patch(
        self, kind: Kind, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> Wire:
        """An RFC 7386 merge patch (used only for occ's keys on an adopted namespace)."""
        model = self._on_objects(
            "patch",
            kind,
            namespace,
            name,
            body=dict(patch),
            field_manager=FIELD_MANAGER,
            _content_type=MERGE,
        )
        return self._wire(model)

    def delete(self, kind: Kind, namespace: str | None, name: str, uid: str) -> None:
        """Delete the object with this ``uid``; already gone (404) or replaced (409) is done."""
        options = k8s.V1DeleteOptions(
            preconditions=k8s.V1Preconditions(uid=uid), propagation_policy="Background"
        )
        self._on_objects(
            "delete", kind, namespace, name, body=options, missing_ok=True, conflict_ok=True
        )

    def _on_objects(
        self,
        verb: str,
        kind: Kind,
        namespace: str | None,
        *names: str,
        label: str | None = None,
        missing_ok: bool = False,
        exists_ok: bool = False,
        conflict_ok: bool = False,
        **arguments: Any,
    ) -> Any:
        """``verb`` on objects of ``kind`` (in ``namespace`` when the kind is namespaced) under
        the request timeout; ``label`` (else ``verb``) names the call in errors and logs."""
        call = self._method(verb, kind)
        return self._call(
            f"{label or verb} {kind.kind}",
            lambda: call(
                *names,
                **self._where(kind, namespace),
                **arguments,
                _request_timeout=self.timeout_s,
            ),
            missing_ok=missing_ok,
            exists_ok=exists_ok,
            conflict_ok=conflict_ok,
        )

    # -- cluster checks -----------------------------------------------------------------

    def server_version(self) -> tuple[int, int]:
        """The API server's (major, minor) version (a ``+`` suffix is ignored)."""
        api = k8s.VersionApi(self._api_client())
        info = self._call("read version", lambda: api.get_code(_request_timeout=self.timeout_s))
        try:
            major = int(re.sub(r"\D.*$", "", str(info.major)))
            minor = int(re.sub(r"\D.*$", "", str(info.minor)))
        except ValueError:
            raise base.TransientDriverError(
                RESPONSE_INVALID, "the API server reported no usable version"
            ) from None
        return major, minor

    def allowed(self, verb: str, kind: Kind, namespace: str | None = None) -> bool:
        """Whether occ's identity may ``verb`` ``kind`` (a SelfSubjectAccessReview)."""
        api = k8s.AuthorizationV1Api(self._api_client())
        attributes = k8s.V1ResourceAttributes(
            verb=verb, group=kind.group, resource=kind.plural, namespace=namespace
        )
        review = k8s.V1SelfSubjectAccessReview(
            api_version="authorization.k8s.io/v1",
            kind="SelfSubjectAccessReview",
            spec=k8s.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes),
        )
        result = self._call(
            "create SelfSubjectAccessReview",
            lambda: api.create_self_subject_access_review(
                body=review, _request_timeout=self.timeout_s
            ),
        )
        status = getattr(result, "status", None)
        return bool(getattr(status, "allowed", False))

    # -- errors -------------------------------------------------------------------------

    def _call(
        self,
        operation: str,
        call: Callable[[], Any],
        *,
        missing_ok: bool = False,
        exists_ok: bool = False,
        conflict_ok: bool = False,
    ) -> Any:
        try:
            return call()
        except k8s.ApiException as exc:
            reason = status_reason(exc)
            if exc.status == 404 and missing_ok:
                return None
            if exc.status == 409 and (conflict_ok or (exists_ok and reason == "AlreadyExists")):
                return None
            _raise_translated(operation, exc, reason)
        except urllib3.exceptions.HTTPError as exc:
            _log_failure(operation, None, None, UNAVAILABLE, type(exc).__name__)
            raise base.TransientDriverError(
                UNAVAILABLE, f"{operation}: the API server did not answer ({type(exc).__name__})"
            ) from None
        except pydantic.ValidationError:
            _log_failure(operation, None, None, RESPONSE_INVALID, "ValidationError")
            raise base.TransientDriverError(
                RESPONSE_INVALID, f"{operation}: the API server's answer was not understood"
            ) from None


def status_reason(exc: k8s.ApiException) -> str:
    """The Kubernetes Status ``reason`` of a failed call, bounded (``""`` when absent)."""
    try:
        document = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        return ""
    reason = document.get("reason") if isinstance(document, dict) else None
    if not isinstance(reason, str):
        return ""
    return "".join(c for c in reason if c.isalnum())[:MAX_REASON]


def _terminating(exc: k8s.ApiException) -> bool:
    """Whether a 403 is "the namespace is being terminated" (a wait, not a refusal)."""
    try:
        document = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        return False
    if not isinstance(document, dict):
        return False
    causes = (document.get("details") or {}).get("causes") or []
    if any(isinstance(c, dict) and c.get("reason") == "NamespaceTerminating" for c in causes):
        return True
    return "being terminated" in str(document.get("message", ""))


def _retry_after(exc: k8s.ApiException) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers is not None else None
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


def _raise_translated(operation: str, exc: k8s.ApiException, reason: str) -> NoReturn:
    status = exc.status if isinstance(exc.status, int) else 0
    described = f"{operation}: HTTP {status}" + (f" {reason}" if reason else "")
    error: base.DriverError
    if status == 429:
        error = Throttled(described, _retry_after(exc))
    elif status == 409:
        error = base.TransientDriverError(CONFLICT, described)
    elif status == 403 and _terminating(exc):
        error = base.TransientDriverError(TERMINATING, described)
    elif status in (401, 403):
        error = base.PermanentDriverError(FORBIDDEN, described)
    elif status == 404:
        error = base.PermanentDriverError(MISSING, described)
    elif status in (400, 422):
        error = base.PermanentDriverError(INVALID, described)
    elif status == 0 or status >= 500:
        error = base.TransientDriverError(UNAVAILABLE, described)
    else:
        error = base.PermanentDriverError(INVALID, described)
    _log_failure(operation, status, reason, error.code, type(exc).__name__)
    raise error from None


def _log_failure(
    operation: str, status: int | None, reason: str | None, code: str, error: str
) -> None:
    observability.log(
        "compute.kubernetes-request-failed",
        level=logging.WARNING,
        operation=operation,
        status=status,
        reason=reason or None,
        code=code,
        error=error,
    )
