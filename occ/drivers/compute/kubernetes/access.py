"""What occ must be allowed to do on the cluster, and the start-up verification that checks it.

Two installations. ``cluster``: ``REQUIRED_ACCESS`` cluster-wide (the deploy manifests'
ClusterRole grants the same; occ creates the namespaces it works in and watches across all
of them). ``tenant-scoped``: ``NAMESPACED_ACCESS`` in each managed namespace (the Role that
``occ kubernetes rbac`` prints), nothing cluster-wide. A test derives both from a whole
lifecycle against the fake API server, so a worker with too little access exits before it
claims work, with the list of what it may not do. The API reads gateway logs and needs far
less: ``LOG_READER_ACCESS`` (``NAMESPACED_LOG_READER_ACCESS`` per managed namespace), and with
the kubernetes Secret Driver ``SECRET_VALUE_ACCESS`` besides.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import client, kinds, watched
from occ.telemetry import observability

MINIMUM_VERSION: Final = (1, 30)
"""API server versions below this one get a warning at preflight."""

PERMISSION_MISSING: Final = "KUBERNETES_PERMISSION_MISSING"

CLUSTER: Final = "cluster"
TENANT_SCOPED: Final = "tenant-scoped"

_WRITE: Final = ("get", "list", "create", "patch", "delete")
_CREATE_ONLY: Final = ("get", "list", "create", "delete")
"""Objects created once and never changed: the revision's ConfigMap, the Agent's volume."""
_NEVER_DELETED: Final = ("get", "list", "create", "patch")
"""Namespace policy objects, removed only with their namespace."""
_STARTUP_WARNINGS: Final = (("list", kinds.POD), ("get", kinds.POD_LOG))
"""A gateway's startup warnings: its revision's ready Pod found, the start of its log read."""

_OBJECT_ACCESS: Final = (
    *(
        (verb, kind)
        for kind in (
            kinds.SECRET,
            kinds.SERVICE_ACCOUNT,
            kinds.SERVICE,
            kinds.DEPLOYMENT,
            kinds.NETWORK_POLICY,
        )
        for verb in _WRITE
    ),
    *((verb, kind) for kind in (kinds.CONFIG_MAP, kinds.CLAIM) for verb in _CREATE_ONLY),
)
"""The (verb, kind) pairs of occ's own objects in a namespace, the same in either installation."""

REQUIRED_ACCESS: Final = (
    *((verb, kinds.NAMESPACE) for verb in _WRITE),
    *_OBJECT_ACCESS,
    *((verb, kind) for kind in (kinds.QUOTA, kinds.LIMITS) for verb in _NEVER_DELETED),
    ("list", kinds.ENDPOINT_SLICE),
    *_STARTUP_WARNINGS,
    *(("watch", kind.kind) for kind in watched.KINDS),
)
"""Every (verb, kind) the driver uses in a ``cluster`` installation, checked cluster-wide by
``preflight``: the passes' verbs, and ``list`` and ``watch`` across all namespaces for the
observation cache."""

NAMESPACED_ACCESS: Final = (
    ("get", kinds.NAMESPACE),
    ("patch", kinds.NAMESPACE),
    *_OBJECT_ACCESS,
    ("list", kinds.ENDPOINT_SLICE),
    *_STARTUP_WARNINGS,
    *(("watch", kind.kind) for kind in watched.KINDS if kind.kind.namespaced),
)
"""Every (verb, kind) the driver uses in one managed namespace of a ``tenant-scoped``
installation: the namespace itself is only read and labelled (a Role in a namespace may
grant ``get`` and ``patch`` of that namespace and no other), occ's objects are written as in
a ``cluster`` installation, quotas and limit ranges are the tenant's, and the observation
cache lists and watches each kind in the namespace."""


LOG_READER_ACCESS: Final = (("list", kinds.NAMESPACE), ("list", kinds.POD), ("get", kinds.POD_LOG))
"""What the API needs for ``occ agents logs`` in a ``cluster`` installation, and nothing more:
the Namespace's Kubernetes namespace found by label, its gateway Pods listed, one Pod's log
read. Without the kubernetes Secret Driver, the API never writes to Kubernetes."""

NAMESPACED_LOG_READER_ACCESS: Final = (
    ("get", kinds.NAMESPACE),
    ("list", kinds.POD),
    ("get", kinds.POD_LOG),
)
"""The same read in one managed namespace of a ``tenant-scoped`` installation, where the
namespace is read by name."""

SECRET_VALUE_ACCESS: Final = tuple(
    (verb, kinds.SECRET) for verb in ("get", "create", "patch", "delete")
)
"""What the API needs besides the log reader's access to keep Secret values with the kubernetes
Secret Driver (``OCC_SECRET_DRIVER=kubernetes``), cluster-wide or in each managed namespace of
a ``tenant-scoped`` installation: a value applied server-side (``patch``, and ``create`` when
the apply creates it), read and deleted by name. The Namespace's Kubernetes namespace is found
as the log reader finds it (by label, or each managed one read by name)."""


@dataclass(frozen=True)
class Verification:
    """What the start-up verification found: per scope (``cluster`` or a namespace), the
    ``verb resource`` occ may not do (none: all granted), and how many accesses it checked."""

    installation: str
    checked: int
    scopes: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def missing(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((scope, denied) for scope, denied in self.scopes if denied)

    @property
    def passed(self) -> bool:
        return not self.missing

    def lines(self, *, everything: bool = False) -> list[str]:
        """One line per scope that misses something (``everything``: per scope)."""
        per_scope = len(
            NAMESPACED_ACCESS if self.installation == TENANT_SCOPED else REQUIRED_ACCESS
        )
        return [
            f"{scope}: occ may not {', '.join(denied)}"
            if denied
            else f"{scope}: ok ({per_scope} accesses granted)"
            for scope, denied in self.scopes
            if denied or everything
        ]


def missing_in(api: client.KubernetesApi, namespace: str) -> tuple[str, ...]:
    """What occ may not do in ``namespace`` of what a tenant-scoped installation needs."""
    return tuple(
        f"{verb} {kind.resource}"
        for verb, kind in NAMESPACED_ACCESS
        if not api.allowed(verb, kind, namespace)
    )


def verify(
    api: client.KubernetesApi, installation: str, namespaces: Sequence[str] = ()
) -> Verification:
    """Every access the installation needs, asked with SelfSubjectAccessReviews."""
    found: list[tuple[str, tuple[str, ...]]]
    if installation == TENANT_SCOPED:
        found = [(f"namespace {name}", missing_in(api, name)) for name in namespaces]
        checked = len(NAMESPACED_ACCESS) * len(namespaces)
    else:
        denied = tuple(
            f"{verb} {kind.resource}"
            for verb, kind in REQUIRED_ACCESS
            if not api.allowed(verb, kind)
        )
        found = [("cluster", denied)]
        checked = len(REQUIRED_ACCESS)
    return Verification(installation, checked, tuple(found))


def check(
    api: client.KubernetesApi, installation: str = CLUSTER, namespaces: Sequence[str] = ()
) -> Verification:
    """Warn about an old API server; refuse when occ may not do a verb it uses (the error
    lists every scope and verb missing); log what was verified."""
    major, minor = api.server_version()
    if (major, minor) < MINIMUM_VERSION:
        observability.log(
            "compute.kubernetes-version-old",
            level=logging.WARNING,
            reason=f"API server {major}.{minor} is older than "
            f"{MINIMUM_VERSION[0]}.{MINIMUM_VERSION[1]}",
        )
    verification = verify(api, installation, namespaces)
    if not verification.passed:
        raise base.PermanentDriverError(PERMISSION_MISSING, "; ".join(verification.lines()))
    scope = f"namespaces {', '.join(namespaces)}" if installation == TENANT_SCOPED else "cluster"
    observability.log(
        "compute.kubernetes-access-verified",
        reason=f"{installation} installation: every access occ needs is granted ({scope})",
        count=verification.checked,
    )
    return verification
