"""The Roles and RoleBindings of a tenant-scoped installation, as ``occ kubernetes rbac`` prints
them for an administrator to apply in each managed namespace (and, if asked, the namespace
itself at the restricted Pod Security level).

The workers' Role is ``access.NAMESPACED_ACCESS`` and nothing more: one rule per API group and
set of verbs, in a stable order, so that the printed Role, the start-up verification and the
test that runs the driver with exactly this Role agree. The API's Role,
``access.NAMESPACED_LOG_READER_ACCESS``, lets it read gateway logs (``occ agents logs``).
Pure: builds dicts, talks to nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from occ.drivers.compute.kubernetes import access, kinds, namespace_manifests, naming

ROLE_NAME: Final = "occ-compute-driver"
LOG_READER_ROLE_NAME: Final = "occ-log-reader"
SECRET_VALUES_ROLE_NAME: Final = "occ-secret-values"  # noqa: S105 - a Role's name
DEFAULT_SUBJECT_NAMESPACE: Final = "occ-system"
DEFAULT_SUBJECT_NAME: Final = "occ-worker"
"""The workers' ServiceAccount in ``deploy/kubernetes``."""
DEFAULT_API_SUBJECT_NAME: Final = "occ-api"
"""The API's ServiceAccount in ``deploy/kubernetes``: it reads gateway logs only."""

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


def role(
    namespace: str,
    *,
    name: str = ROLE_NAME,
    needed: Iterable[tuple[str, kinds.Kind]] = access.NAMESPACED_ACCESS,
) -> Manifest:
    """A Role granting ``needed`` in ``namespace``: by default, what occ's workers may do."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels()},
        "rules": rules(needed),
    }


def role_binding(
    namespace: str,
    *,
    subject_namespace: str = DEFAULT_SUBJECT_NAMESPACE,
    subject_name: str = DEFAULT_SUBJECT_NAME,
    name: str = ROLE_NAME,
) -> Manifest:
    """The Role ``name`` bound to a ServiceAccount (by default, the workers')."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
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
    api_subject: tuple[str, str] | None = (DEFAULT_SUBJECT_NAMESPACE, DEFAULT_API_SUBJECT_NAME),
    secret_values: bool = False,
    with_namespace: bool = False,
) -> list[Manifest]:
    """The Roles and RoleBindings of every namespace, in order (each after its Namespace when
    ``with_namespace``): the workers', then the API's for ``api_subject`` (namespace, name;
    ``None``: none): its log read, and with ``secret_values`` the kubernetes Secret Driver's
    values."""
    return [
        manifest
        for name in namespaces
        for manifest in (
            *((namespace(name),) if with_namespace else ()),
            role(name),
            role_binding(name, subject_namespace=subject_namespace, subject_name=subject_name),
            *_api_roles(name, api_subject, secret_values=secret_values),
        )
    ]


def _api_roles(
    namespace: str, subject: tuple[str, str] | None, *, secret_values: bool
) -> tuple[Manifest, ...]:
    if subject is None:
        return ()
    subject_namespace, subject_name = subject
    needs: list[tuple[str, Iterable[tuple[str, kinds.Kind]]]] = [
        (LOG_READER_ROLE_NAME, access.NAMESPACED_LOG_READER_ACCESS)
    ]
    if secret_values:
        needs.append((SECRET_VALUES_ROLE_NAME, access.SECRET_VALUE_ACCESS))
    return tuple(
        manifest
        for name, needed in needs
        for manifest in (
            role(namespace, name=name, needed=needed),
            role_binding(
                namespace, subject_namespace=subject_namespace, subject_name=subject_name, name=name
            ),
        )
    )
