"""Kubernetes API access as ``(verb, apiGroup, resource)``: from a request journal, from RBAC.

``used`` turns the fake API server's journal into the authorization requests a real API
server would check: GET of an item is ``get``, of a collection ``list`` (``watch`` with
``watch=true``); POST ``create``;
PATCH ``patch`` (and also ``create`` when a server-side apply created the object, answered
201: the API server authorizes that as a create); DELETE ``delete``; PUT ``update``.
``granted`` expands RBAC rules into the same triples. Pure functions; no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from tests.support.kube_api import Request

APPLY: Final = "application/apply-patch+yaml"


@dataclass(frozen=True, order=True)
class Access:
    """One authorization request: ``verb`` on ``resource`` of ``group`` ("" is core)."""

    group: str
    resource: str
    verb: str

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}" + (f".{self.group}" if self.group else "")


@dataclass(frozen=True)
class Used:
    """What a journal asked for: resource access, and the non-resource paths it read."""

    access: frozenset[Access]
    non_resource_paths: frozenset[str]


def _target(path: str) -> tuple[str, str, bool] | None:
    """``(group, resource, is_item)`` of an API path; ``None`` for a non-resource path."""
    parts = [part for part in path.split("/") if part]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]  # a namespaced resource: drop namespaces/<name>
    if not rest:
        return None
    resource = rest[0] if len(rest) <= 2 else f"{rest[0]}/{rest[2]}"  # a subresource
    return group, resource, len(rest) >= 2


def used(journal: Iterable[Request]) -> Used:
    """The access the requests of ``journal`` needed."""
    access: set[Access] = set()
    paths: set[str] = set()
    for request in journal:
        target = _target(request.path)
        if target is None:
            paths.add("/" + request.path.strip("/"))
            continue
        group, resource, is_item = target
        verbs = _verbs(request, is_item)
        access.update(Access(group, resource, verb) for verb in verbs)
    return Used(frozenset(access), frozenset(paths))


def _verbs(request: Request, is_item: bool) -> tuple[str, ...]:
    method = request.method.upper()
    if method == "GET":
        if is_item:
            return ("get",)
        return ("watch",) if request.query.get("watch", [""])[-1] == "true" else ("list",)
    if method == "POST":
        return ("create",)
    if method == "PATCH":
        created = request.content_type == APPLY and request.status == 201
        return ("patch", "create") if created else ("patch",)
    if method == "DELETE":
        return ("delete",) if is_item else ("deletecollection",)
    if method == "PUT":
        return ("update",)
    raise ValueError(f"unexpected method {method} in the journal")


def granted(rules: Iterable[Mapping[str, Any]]) -> frozenset[Access]:
    """Every triple the RBAC ``rules`` allow; a wildcard or a rule naming no resource is an
    error (occ's roles list what they allow)."""
    access: set[Access] = set()
    for rule in rules:
        groups, resources, verbs = rule["apiGroups"], rule["resources"], rule["verbs"]
        for value in (*groups, *resources, *verbs):
            if "*" in value:
                raise ValueError(f"a wildcard in an RBAC rule: {rule}")
        if rule.get("resourceNames") or rule.get("nonResourceURLs"):
            raise ValueError(f"a rule narrowed by name or by URL: {rule}")
        access.update(
            Access(group, resource, verb)
            for group in groups
            for resource in resources
            for verb in verbs
        )
    return frozenset(access)


def access_review(request: Request) -> Access | None:
    """What a SelfSubjectAccessReview in the journal asked about (``None`` for others)."""
    if not request.path.endswith("/selfsubjectaccessreviews") or not request.body:
        return None
    attributes = (request.body.get("spec") or {}).get("resourceAttributes") or {}
    resource = attributes.get("resource", "")
    if attributes.get("subresource"):
        resource = f"{resource}/{attributes['subresource']}"
    return Access(attributes.get("group") or "", resource, attributes.get("verb", ""))
