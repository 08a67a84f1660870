"""The apiserver's verbs on one resource: create, read, list, replace, patch, delete.

Models the generic registry's rules around the store: type and namespace checks, create
conflicts (409 ``AlreadyExists``, 404 for a missing namespace, 403 inside a Terminating
one), optimistic concurrency (409 ``Conflict``), validation (422 ``Invalid``), server-owned
fields that writes cannot change (system metadata, status, an allocated ``clusterIP``),
server-side apply for a sole field manager, and deletion with preconditions and finalizers.
It must not parse HTTP: it takes parsed bodies and returns (code, object).
"""

from __future__ import annotations

import copy
import secrets
import threading
from dataclasses import dataclass
from typing import Any

from tests.support.kube_api import (
    errors,
    listing,
    patches,
    resources,
    simulation,
    store,
    validation,
)

Obj = resources.Obj
Resource = resources.Resource
_STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


@dataclass(frozen=True)
class ValidationFailure:
    """A written object the apiserver rejected as ``Invalid`` for its content."""

    plural: str
    namespace: str | None
    name: str
    causes: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.plural} {self.namespace}/{self.name}: {'; '.join(self.causes)}"


class Verbs:
    """Request semantics over a store, its controllers and the validation settings."""

    def __init__(
        self,
        objects: store.Store,
        controllers: simulation.Simulation,
        *,
        validate: bool,
        schema_version: str,
    ) -> None:
        self.store = objects
        self.controllers = controllers
        self.validate = validate
        self.schema_version = schema_version
        self._failures_lock = threading.Lock()
        self._failures: list[ValidationFailure] = []

    @property
    def validation_failures(self) -> list[ValidationFailure]:
        with self._failures_lock:
            return list(self._failures)

    def clear_validation_failures(self) -> None:
        with self._failures_lock:
            self._failures.clear()

    # -- reads ----------------------------------------------------------------------------

    def read(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        with self.store.lock:
            self.controllers.before_read(resource, name)
            obj = self.store.get(resource.plural, namespace, name)
        if obj is None:
            raise errors.not_found(resource.plural, name, resource.group)
        return obj

    def list_items(
        self,
        resource: Resource,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        *,
        limit: int | None = None,
        token: str | None = None,
        metadata: bool = False,
    ) -> Obj:
        """A list answer (``listing.page``): every match, or a page of them."""
        match = listing.matcher(label_selector, field_selector)
        return listing.page(
            self.store, resource, namespace, match, limit=limit, token=token, metadata=metadata
        )

    # -- writes ---------------------------------------------------------------------------

    def create(
        self,
        resource: Resource,
        namespace: str | None,
        body: Any,
        manager: str,
        operation: str = "Update",
    ) -> tuple[int, Obj]:
        self._writable(resource)
        obj = self._typed_body(resource, body, namespace)
        metadata = obj["metadata"]
        if metadata.get("resourceVersion"):
            raise errors.ApiError(
                500, "InternalError", "resourceVersion should not be set on objects to be created"
            )
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = f"{metadata['generateName']}{secrets.token_hex(3)[:5]}"
        name = metadata.get("name")
        with self.store.lock:
            if resource.namespaced:
                self._check_namespace_accepts(resource, namespace or "", str(name))
            self._check_content(resource, obj)
            self._server_fields_on_create(resource, obj)
            self._check_schema(resource, obj)
            if self.store.get(resource.plural, namespace, str(name)) is not None:
                raise errors.already_exists(resource.plural, str(name), resource.group)
            created = self.store.create(resource, obj, manager, operation)
            self.controllers.after_write(resource, None, created)
        return 201, created

    def replace(
        self, resource: Resource, namespace: str | None, name: str, body: Any, manager: str
    ) -> tuple[int, Obj]:
        self._writable(resource)
        with self.store.lock:
            old = self._existing(resource, namespace, name)
            new = self._typed_body(resource, body, namespace, name)
            return 200, self._update(resource, old, new, manager, "Update")

    def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        content_type: str,
        *,
        field_manager: str | None,
        manager: str,
        force: bool,
    ) -> tuple[int, Obj]:
        self._writable(resource)
        if content_type not in patches.PATCH_TYPES:
            raise errors.ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown "
                f"format - accepted media types include: {', '.join(patches.PATCH_TYPES)}",
            )
        is_apply = content_type == patches.APPLY
        if force and not is_apply:
            raise errors.invalid(
                resource.kind, name, ["force: Forbidden: may not be specified for non-apply patch"]
            )
        if is_apply and not field_manager:
            raise errors.invalid(
                resource.kind, name, ["fieldManager: Required value: is required for apply patch"]
            )
        with self.store.lock:
            old = self.store.get(resource.plural, namespace, name)
            if is_apply:
                if not isinstance(body, dict) or not body.get("apiVersion") or not body.get("kind"):
                    raise errors.bad_request("an apply patch must state apiVersion and kind")
                desired = self._typed_body(resource, body, namespace, name)
                if old is None:
                    return self.create(resource, namespace, desired, str(field_manager), "Apply")
                return 200, self._update(resource, old, desired, str(field_manager), "Apply")
            if old is None:
                raise errors.not_found(resource.plural, name, resource.group)
            new = patches.patched(old, body, content_type)
            new = self._typed_body(resource, new, namespace, name)
            return 200, self._update(resource, old, new, field_manager or manager, "Update")

    def write_behind_back(self, resource: Resource, old: Obj, new: Obj, manager: str) -> Obj:
        """Store someone else's change as given (status too); versions move as for any write."""
        with self.store.lock:
            stored = self.store.update(resource, new, manager, "Update")
            self._after_update(resource, old, stored)
            return stored

    def delete(
        self, resource: Resource, namespace: str | None, name: str, options: Any
    ) -> tuple[int, Obj]:
        self._writable(resource)
        options = options if isinstance(options, dict) else {}
        policy = options.get("propagationPolicy")
        if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
            raise errors.bad_request(f"propagationPolicy {policy!r} is not supported")
        with self.store.lock:
            old = self._existing(resource, namespace, name)
            _check_preconditions(resource, old, options.get("preconditions") or {})
            if resource.plural == "namespaces":
                if old["metadata"].get("deletionTimestamp"):
                    raise errors.conflict(
                        resource.plural,
                        name,
                        "The system is ensuring all content is removed from this namespace.  "
                        "Upon completion, this namespace will automatically be purged by the "
                        "system.",
                    )
                return 200, self.store.mark_deleting(resource, old)
            if old["metadata"].get("finalizers"):
                return 200, self.store.mark_deleting(resource, old)
            self.store.remove(resource.plural, namespace, name)
            self.controllers.after_delete(resource, old)
        return 200, old

    def delete_collection(
        self,
        resource: Resource,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        options: Any,
    ) -> tuple[int, Obj]:
        with self.store.lock:
            matching = self.list_items(resource, namespace, label_selector, field_selector)["items"]
            for item in matching:
                self.delete(resource, namespace, item["metadata"]["name"], options)
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}

    # -- the rules ------------------------------------------------------------------------

    def _update(self, resource: Resource, old: Obj, new: Obj, manager: str, operation: str) -> Obj:
        metadata = new["metadata"]
        name = old["metadata"]["name"]
        if metadata.get("resourceVersion") not in (None, "", old["metadata"]["resourceVersion"]):
            raise errors.conflict(resource.plural, name, _STALE, resource.group)
        if metadata.get("uid") not in (None, "", old["metadata"]["uid"]):
            raise errors.conflict(
                resource.plural,
                name,
                f"Precondition failed: UID in precondition: {metadata['uid']}, UID in object meta: "
                f"{old['metadata']['uid']}",
                resource.group,
            )
        self._check_content(resource, new)
        resources.carry_server_fields(resource, old, new)
        causes = validation.immutability_causes(resource, old, new)
        if causes:
            raise errors.invalid(resource.kind, name, causes, resource.group)
        self._check_schema(resource, new)
        stored = self.store.update(resource, new, manager, operation)
        self._after_update(resource, old, stored)
        return stored

    def _after_update(self, resource: Resource, old: Obj, stored: Obj) -> None:
        metadata = stored["metadata"]
        if self.store.get(resource.plural, metadata.get("namespace"), metadata["name"]) is None:
            self.controllers.after_delete(resource, stored)  # its last finalizer went
        else:
            self.controllers.after_write(resource, old, stored)

    def _existing(self, resource: Resource, namespace: str | None, name: str) -> Obj:
        obj = self.store.get(resource.plural, namespace, name)
        if obj is None:
            raise errors.not_found(resource.plural, name, resource.group)
        return obj

    def _writable(self, resource: Resource) -> None:
        if resource.read_only:
            raise errors.ApiError(
                405, "MethodNotAllowed", f"{resource.plural} are maintained by the cluster here"
            )

    def _typed_body(
        self, resource: Resource, body: Any, namespace: str | None, name: str | None = None
    ) -> Obj:
        """The body as an object of this kind: type, namespace and name agree with the URL."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON or YAML object")
        obj = copy.deepcopy(body)
        for field, expected in (("apiVersion", resource.api_version), ("kind", resource.kind)):
            if obj.setdefault(field, expected) != expected:
                raise errors.bad_request(
                    f"the {field} in the data ({obj[field]}) does not match the expected "
                    f"{field} ({expected})"
                )
        metadata = obj.get("metadata")
        if metadata is None:
            metadata = obj["metadata"] = {}
        if not isinstance(metadata, dict):
            raise errors.bad_request("metadata must be an object")
        if resource.namespaced:
            if metadata.setdefault("namespace", namespace) != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
        else:
            metadata.pop("namespace", None)
        if name is not None and metadata.setdefault("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({metadata['name']}) does not match the name on the URL "
                f"({name})"
            )
        return obj

    def _check_namespace_accepts(self, resource: Resource, namespace: str, name: str) -> None:
        parent = self.store.get("namespaces", None, namespace)
        if parent is None:
            raise errors.not_found("namespaces", namespace)
        if parent["metadata"].get("deletionTimestamp"):
            raise errors.ApiError(
                403,
                "Forbidden",
                f'{resource.plural} "{name}" is forbidden: unable to create new content in '
                f"namespace {namespace} because it is being terminated",
                name=name,
                kind=resource.plural,
                group=resource.group,
            )

    def _check_content(self, resource: Resource, obj: Obj) -> None:
        """Name, label and kind rules (independent of the schema check)."""
        causes = validation.name_causes(resource, obj["metadata"].get("name"))
        causes += validation.metadata_causes(obj["metadata"])
        if resource.plural == "deployments":
            causes += validation.deployment_causes(obj)
        if causes:
            self._reject(resource, obj, causes)

    def _check_schema(self, resource: Resource, obj: Obj) -> None:
        if not self.validate:
            return
        causes = validation.schema_causes(obj, self.schema_version)
        if causes:
            self._reject(resource, obj, causes)

    def _reject(self, resource: Resource, obj: Obj, causes: list[str]) -> None:
        metadata = obj["metadata"]
        name = str(metadata.get("name") or "")
        with self._failures_lock:
            self._failures.append(
                ValidationFailure(resource.plural, metadata.get("namespace"), name, tuple(causes))
            )
        raise errors.invalid(resource.kind, name, causes, resource.group)

    def _server_fields_on_create(self, resource: Resource, obj: Obj) -> None:
        obj.pop("status", None)
        status = resources.initial_status(resource)
        if status is not None:
            obj["status"] = status
        resources.fold_string_data(resource, obj)
        resources.apply_defaults(resource, obj)
        if resource.plural == "services":
            spec = obj.setdefault("spec", {})
            if spec.get("type") != "ExternalName":
                if not spec.get("clusterIP"):
                    spec["clusterIP"] = self.store.allocate_cluster_ip()
                spec.setdefault("clusterIPs", [spec["clusterIP"]])


def _check_preconditions(resource: Resource, obj: Obj, preconditions: Any) -> None:
    metadata = obj["metadata"]
    for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        wanted = preconditions.get(field) if isinstance(preconditions, dict) else None
        if wanted and wanted != metadata[field]:
            raise errors.conflict(
                resource.plural,
                metadata["name"],
                f"Precondition failed: {label} in precondition: {wanted}, {label} in object meta: "
                f"{metadata[field]}",
                resource.group,
            )
