"""The Role and RoleBinding of a tenant-scoped installation, as ``occ kubernetes rbac`` prints
them for an administrator to apply in each managed namespace (and, if asked, the namespace
itself at the restricted Pod Security level).

The rules are ``access.NAMESPACED_ACCESS`` and nothing more: one rule per API group and set
of verbs, in a stable order, so that the printed Role, the start-up verification and the test
that runs the driver with exactly this Role agree. Pure: builds dicts, talks to nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from occ.drivers.compute.kubernetes import access, kinds, namespace_manifests, naming

ROLE_NAME: Final = "occ-compute-driver"
DEFAULT_SUBJECT_NAMESPACE: Final = "occ-system"
DEFAULT_SUBJECT_NAME: Final = "occ-worker"
"""The workers' ServiceAccount in ``deploy/kubernetes``."""

_VERB_ORDER: Final = ("get", "list", "watch", "create", "patch", "delete")

Manifest = naming.Manifest


def rules(needed: Iterable[tuple[str, kinds.Kind]] = access.NAMESPACED_ACCESS) -> list[Manifest]:
    """RBAC rules granting exactly ``needed``: resources with the same group and verbs share
    one rule."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for verb, kind in needed:
        verbs.setdefault((kind.group, kind.resource), set()).add(verb)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, plural), granted in verbs.items():
        ordered = tuple(verb for verb in _VERB_ORDER if verb in granted)
        grouped.setdefault((group, ordered), []).append(plural)
    return [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": list(ordered)}
        for (group, ordered), plurals in sorted(grouped.items())
    ]


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": "occ", "app.kubernetes.io/part-of": "occ"}


def role(namespace: str) -> Manifest:
    """What occ may do in ``namespace``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": ROLE_NAME, "namespace": namespace, "labels": _labels()},
        "rules": rules(),
    }


def role_binding(
    namespace: str,
    *,
    subject_namespace: str = DEFAULT_SUBJECT_NAMESPACE,
    subject_name: str = DEFAULT_SUBJECT_NAME,
) -> Manifest:
    """The Role bound to occ's workers' ServiceAccount."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": ROLE_NAME, "namespace": namespace, "labels": _labels()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE_NAME},
        "subjects": [
            {"kind": "ServiceAccount", "name": subject_name, "namespace": subject_namespace}
        ],
    }


def namespace(name: str) -> Manifest:
    """A managed namespace as the administrator creates it: the restricted Pod Security
    level, as in the namespaces occ creates itself (occ adds its own labels on first use)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": namespace_manifests.pod_security_labels()},
    }


def provisioning(
    namespaces: Iterable[str],
    *,
    subject_namespace: str = DEFAULT_SUBJECT_NAMESPACE,
    subject_name: str = DEFAULT_SUBJECT_NAME,
    with_namespace: bool = False,
) -> list[Manifest]:
    """The Role and RoleBinding of every namespace, in order (each after its Namespace when
    ``with_namespace``)."""
    return [
        manifest
        for name in namespaces
        for manifest in (
            *((namespace(name),) if with_namespace else ()),
            role(name),
            role_binding(name, subject_namespace=subject_namespace, subject_name=subject_name),
        )
    ]
