"""RBAC as far as tests need it: verbs a test has denied answer 403 ``Forbidden``, and a test
may restrict the fake's user to the rules of some Roles and ClusterRoles.

Models the authorizer's decision (also reported by ``SelfSubjectAccessReview``) for the
fake's single user: everything not denied is allowed, unless ``grant_only`` named the roles
bound to the user; then a request is allowed only when a rule grants it (a Role's rules only
in its own namespace, a ClusterRole's everywhere), as the RBAC authorizer decides. A request
on a namespace object itself is in that namespace (the apiserver's request info says so, so a
Role may grant ``get`` of its own namespace); a list or watch of namespaces is cluster-wide.
``SelfSubjectAccessReview`` and ``/version`` need no rule (every cluster grants them to every
user). It must not answer HTTP itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tests.support.kube_api import errors

USER = "system:serviceaccount:occ-system:occ-driver"


@dataclass(frozen=True)
class Denial:
    verb: str
    resource: str
    namespace: str | None


@dataclass(frozen=True)
class Grant:
    """One rule of a bound role: ``namespace`` is the Role's (``None``: a ClusterRole's)."""

    namespace: str | None
    groups: frozenset[str]
    resources: frozenset[str]
    verbs: frozenset[str]

    def allows(self, verb: str, group: str | None, resource: str, namespace: str | None) -> bool:
        return (
            (self.namespace is None or self.namespace == namespace)
            and (group is None or group in self.groups or "*" in self.groups)
            and (resource in self.resources or "*" in self.resources)
            and (verb in self.verbs or "*" in self.verbs)
        )


def grants(documents: Iterable[Mapping[str, Any]]) -> list[Grant]:
    """The rules of every Role and ClusterRole among ``documents`` that a RoleBinding or
    ClusterRoleBinding among them binds (the fake's user is every binding's subject)."""
    documents = list(documents)
    bound: set[tuple[str, str | None, str]] = set()
    for document in documents:
        if document.get("kind") not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = document["roleRef"]
        namespace = (document.get("metadata") or {}).get("namespace")
        bound.add((ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"]))
    found: list[Grant] = []
    for document in documents:
        if document.get("kind") not in ("Role", "ClusterRole"):
            continue
        metadata = document.get("metadata") or {}
        namespace = metadata.get("namespace") if document["kind"] == "Role" else None
        if (document["kind"], namespace, metadata.get("name")) not in bound:
            continue
        found.extend(
            Grant(
                namespace,
                frozenset(rule.get("apiGroups") or ()),
                frozenset(rule.get("resources") or ()),
                frozenset(rule.get("verbs") or ()),
            )
            for rule in document.get("rules") or ()
        )
    return found


class Authorizer:
    """The denied (verb, resource, namespace) triples (``*`` matches any verb or resource),
    and the grants the user is restricted to (``None``: everything)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._denials: list[Denial] = []
        self._grants: list[Grant] | None = None

    def deny(self, verb: str, resource: str, namespace: str | None = None) -> None:
        with self._lock:
            self._denials.append(Denial(verb, resource, namespace))

    def grant_only(self, granted: Iterable[Grant]) -> None:
        with self._lock:
            self._grants = list(granted)

    def clear(self) -> None:
        with self._lock:
            self._denials.clear()
            self._grants = None

    def allowed(
        self, verb: str, resource: str, namespace: str | None, group: str | None = None
    ) -> bool:
        with self._lock:
            if any(
                denial.verb in ("*", verb)
                and denial.resource in ("*", resource)
                and (denial.namespace is None or denial.namespace == namespace)
                for denial in self._denials
            ):
                return False
            return self._grants is None or any(
                grant.allows(verb, group, resource, namespace) for grant in self._grants
            )

    def check(
        self, verb: str, resource: str, group: str, namespace: str | None, name: str | None
    ) -> None:
        """Raise the apiserver's 403 when ``verb`` on ``resource`` is denied."""
        if self.allowed(verb, resource, namespace, group):
            return
        subject = f'{resource} "{name}"' if name else resource
        scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        base_resource = resource.split("/", 1)[0]
        raise errors.ApiError(
            403,
            "Forbidden",
            f'{subject} is forbidden: User "{USER}" cannot {verb} resource "{resource}" in API '
            f'group "{group}"{scope}',
            name=name,
            kind=base_resource,
            group=group,
        )
