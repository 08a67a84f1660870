"""What occ must be allowed to do on the cluster, and the preflight that checks it.

``REQUIRED_ACCESS`` is exactly the access the driver's calls need (the deploy manifests'
ClusterRole grants the same, and a test derives both from a whole lifecycle against the
fake API server), so a worker with too little access exits before it claims work.
"""

from __future__ import annotations

import logging
from typing import Final

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import client, watched
from occ.telemetry import observability

MINIMUM_VERSION: Final = (1, 30)
"""API server versions below this one get a warning at preflight."""

PERMISSION_MISSING: Final = "KUBERNETES_PERMISSION_MISSING"

_WRITE: Final = ("get", "list", "create", "patch", "delete")
_CREATE_ONLY: Final = ("get", "list", "create", "delete")
"""Objects created once and never changed: the revision's ConfigMap, the Agent's volume."""
_NEVER_DELETED: Final = ("get", "list", "create", "patch")
"""Namespace policy objects, removed only with their namespace."""

REQUIRED_ACCESS: Final = (
    *((verb, client.NAMESPACE) for verb in _WRITE),
    *(
        (verb, kind)
        for kind in (
            client.SECRET,
            client.SERVICE_ACCOUNT,
            client.SERVICE,
            client.DEPLOYMENT,
            client.NETWORK_POLICY,
        )
        for verb in _WRITE
    ),
    *((verb, kind) for kind in (client.CONFIG_MAP, client.CLAIM) for verb in _CREATE_ONLY),
    *((verb, kind) for kind in (client.QUOTA, client.LIMITS) for verb in _NEVER_DELETED),
    ("list", client.ENDPOINT_SLICE),
    *(("watch", kind.kind) for kind in watched.KINDS),
)
"""Every (verb, kind) the driver uses, checked by ``preflight``: the passes' verbs, and
``list`` and ``watch`` across all namespaces for the observation cache."""


def check(api: client.KubernetesApi) -> None:
    """Warn about an old API server; refuse when occ may not do a verb it uses."""
    major, minor = api.server_version()
    if (major, minor) < MINIMUM_VERSION:
        observability.log(
            "compute.kubernetes-version-old",
            level=logging.WARNING,
            reason=f"API server {major}.{minor} is older than "
            f"{MINIMUM_VERSION[0]}.{MINIMUM_VERSION[1]}",
        )
    denied = [
        f"{verb} {kind.plural}" for verb, kind in REQUIRED_ACCESS if not api.allowed(verb, kind)
    ]
    if denied:
        raise base.PermanentDriverError(
            PERMISSION_MISSING, "occ may not " + ", ".join(denied[:8])[:200]
        )
