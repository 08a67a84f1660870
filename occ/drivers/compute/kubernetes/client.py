"""The ``kubernetes`` driver's only door to the cluster: the official client, typed methods.

Given a client ``Configuration`` (``cluster_config`` builds it from settings), it calls the
typed API methods with a per-request timeout, paced by the rate limit, hands back objects in
wire form (camelCase dicts) and translates every failure (``failures``). For the observation cache
it lists a kind in every namespace (or in one) by pages and opens watches, unpaced, on a pool
of their own. It never logs or raises a body (a Secret's holds a credential), and it knows
nothing of occ's objects or naming.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import pydantic
import urllib3
from kubernetes import client as k8s

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import failures, kinds, ratelimit

FIELD_MANAGER: Final = "occ"
APPLY: Final = "application/apply-patch+yaml"
MERGE: Final = "application/merge-patch+json"

METADATA_LIST: Final = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_WATCH: Final = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
"""``Accept`` of a list or watch of metadata only (each falls back to whole objects)."""
STREAM_POOL_SIZE: Final = 16
"""Connections kept for lists and watches (one open watch per cached kind)."""

Wire = dict[str, Any]


@dataclass(frozen=True)
class Page:
    """Objects of a list, its resourceVersion and the next page's token (``None``: last)."""

    items: list[Wire]
    resource_version: str
    resume: str | None


class KubernetesApi:
    """Typed calls on one cluster; each returns wire-form objects or raises a driver error.

    The HTTP pool is created lazily in the calling process (a pool must not cross a fork).
    """

    def __init__(
        self,
        configuration: k8s.Configuration,
        *,
        timeout_s: float,
        limiter: ratelimit.TokenBucket | None = None,
    ) -> None:
        self.configuration = configuration
        self.timeout_s = float(timeout_s)
        self.limiter = limiter
        self.stream_pool_size = STREAM_POOL_SIZE
        """Connections kept for lists and watches (more when more watches stay open)."""
        self._client: k8s.ApiClient | None = None
        self._streams: k8s.ApiClient | None = None
        self._pid = 0
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        return str(self.configuration.host)

    def _api(self, kind: kinds.Kind) -> Any:
        return getattr(k8s, kind.api)(self._api_client())

    def _api_client(self) -> k8s.ApiClient:
        with self._lock:
            self._in_this_process()
            if self._client is None:
                self._client = k8s.ApiClient(self.configuration)
            return self._client

    def _stream_client(self) -> k8s.ApiClient:
        """The pool of lists and watches: long watches never hold the passes' connections."""
        with self._lock:
            self._in_this_process()
            if self._streams is None:
                configuration: Any = copy.deepcopy(self.configuration)
                configuration.connection_pool_maxsize = self.stream_pool_size
                configuration.retries = False  # the cache reconnects with its own backoff
                self._streams = k8s.ApiClient(configuration)
            return self._streams

    def _in_this_process(self) -> None:
        if self._pid != os.getpid():  # pools do not cross a fork: forget the parent's
            self._client, self._streams, self._pid = None, None, os.getpid()

    def close(self) -> None:
        with self._lock:
            for pool in (self._client, self._streams):
                if pool is not None and self._pid == os.getpid():
                    closing: Any = pool
                    closing.close()
            self._client, self._streams = None, None

    def _wire(self, model: Any) -> Wire:
        api_client: Any = self._api_client()
        wire = api_client.sanitize_for_serialization(model)
        return wire if isinstance(wire, dict) else {}

    def _method(self, verb: str, kind: kinds.Kind) -> Callable[..., Any]:
        scope = "namespaced_" if kind.namespaced else ""
        method: Callable[..., Any] = getattr(self._api(kind), f"{verb}_{scope}{kind.suffix}")
        return method

    @staticmethod
    def _where(kind: kinds.Kind, namespace: str | None) -> dict[str, Any]:
        return {"namespace": namespace} if kind.namespaced else {}

    # -- object verbs -------------------------------------------------------------------

    def read(self, kind: kinds.Kind, namespace: str | None, name: str) -> Wire | None:
        """The object, or ``None`` when it does not exist."""
        model = self._on_objects("read", kind, namespace, name, missing_ok=True)
        return None if model is None else self._wire(model)

    def find(self, kind: kinds.Kind, namespace: str | None, selector: str) -> list[Wire]:
        """The objects matching the label selector ``selector``."""
        result = self._on_objects("list", kind, namespace, label_selector=selector)
        return [self._wire(item) for item in (result.items or [])]

    def create(
        self, kind: kinds.Kind, namespace: str | None, body: Mapping[str, Any]
    ) -> Wire | None:
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

    def apply(self, kind: kinds.Kind, namespace: str | None, body: Mapping[str, Any]) -> Wire:
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
        self, kind: kinds.Kind, namespace: str | None, name: str, patch: Mapping[str, Any]
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

    def delete(self, kind: kinds.Kind, namespace: str | None, name: str, uid: str) -> None:
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
        kind: kinds.Kind,
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

    # -- the observation cache's lists and watches (unpaced) ------------------------------

    def list_page(
        self,
        kind: kinds.Kind,
        selector: str,
        *,
        limit: int,
        resume: str | None,
        metadata_only: bool,
        namespace: str | None = None,
    ) -> Page:
        """A page of ``kind``'s objects matching ``selector`` in ``namespace`` (unset: every
        namespace; ``Expired`` when the ``resume`` token is too old)."""
        response = self._collection(
            kind,
            METADATA_LIST if metadata_only else None,
            namespace,
            label_selector=selector,
            limit=limit,
            _continue=resume,
            _request_timeout=self.timeout_s,
        )
        try:
            document = json.loads(response.data)
            metadata = document.get("metadata") or {}
            return Page(
                list(document.get("items") or []),
                str(metadata["resourceVersion"]),
                metadata.get("continue") or None,
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            raise failures.not_understood(f"list {kind.kind}") from None

    def watch(
        self,
        kind: kinds.Kind,
        selector: str,
        *,
        resource_version: str,
        timeout_s: int,
        metadata_only: bool,
        namespace: str | None = None,
    ) -> Any:
        """A watch of ``kind``'s objects matching ``selector`` in ``namespace`` (unset: every
        namespace) after
        ``resource_version``, with bookmarks, that the server ends after ``timeout_s``: the raw
        response (``stream()`` its JSON lines; ``shutdown()``). A read waits at most
        ``timeout_s`` plus the request timeout, so a silent connection ends too."""
        return self._collection(
            kind,
            METADATA_WATCH if metadata_only else None,
            namespace,
            label_selector=selector,
            watch=True,
            allow_watch_bookmarks=True,
            resource_version=resource_version,
            timeout_seconds=timeout_s,
            _request_timeout=(self.timeout_s, timeout_s + self.timeout_s),
        )

    def _collection(
        self, kind: kinds.Kind, accept: str | None, namespace: str | None, **arguments: Any
    ) -> Any:
        api = getattr(k8s, kind.api)(self._stream_client())
        if kind.namespaced and namespace is not None:
            method = functools.partial(getattr(api, f"list_namespaced_{kind.suffix}"), namespace)
        else:
            scope = "_for_all_namespaces" if kind.namespaced else ""
            method = getattr(api, f"list_{kind.suffix}{scope}")
        headers = {"Accept": f"{accept},application/json"} if accept else None
        operation = f"{'watch' if arguments.get('watch') else 'list'} {kind.kind}"
        return self._call(
            operation,
            lambda: method(**arguments, _preload_content=False, _headers=headers),
            paced=False,
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
                failures.RESPONSE_INVALID, "the API server reported no usable version"
            ) from None
        return major, minor

    def allowed(self, verb: str, kind: kinds.Kind, namespace: str | None = None) -> bool:
        """Whether occ's identity may ``verb`` ``kind`` (a SelfSubjectAccessReview)."""
        api = k8s.AuthorizationV1Api(self._api_client())
        attributes = k8s.V1ResourceAttributes(
            verb=verb,
            group=kind.group,
            resource=kind.plural,
            subresource=kind.subresource or None,
            namespace=namespace,
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
        paced: bool = True,
        missing_ok: bool = False,
        exists_ok: bool = False,
        conflict_ok: bool = False,
    ) -> Any:
        """``call()`` (after the rate limit when ``paced``), its failures translated."""
        if paced and self.limiter is not None:
            self.limiter.acquire()
        try:
            return call()
        except k8s.ApiException as exc:
            if exc.status == 404 and missing_ok:
                return None
            if exc.status == 409 and (
                conflict_ok or (exists_ok and failures.status_reason(exc.body) == "AlreadyExists")
            ):
                return None
            raise failures.answered(operation, exc) from None
        except urllib3.exceptions.HTTPError as exc:
            raise failures.unanswered(operation, exc) from None
        except pydantic.ValidationError:
            raise failures.not_understood(operation) from None
