"""The object kinds the ``kubernetes`` driver touches: where the client's typed methods for
each live (``client.KubernetesApi`` calls ``<verb>_namespaced_<suffix>`` on its API class) and
how RBAC names it (``access`` and ``rbac`` print and check the permissions from these)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Kind:
    """One object kind: where its typed methods live and how RBAC names it."""

    kind: str
    api: str
    suffix: str
    plural: str
    group: str = ""
    namespaced: bool = True
    subresource: str = ""
    """A subresource RBAC names apart (``log`` of ``pods``); empty for the object itself."""

    @property
    def resource(self) -> str:
        """The resource as RBAC names it: ``pods``, or ``pods/log`` for a subresource."""
        return f"{self.plural}/{self.subresource}" if self.subresource else self.plural


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
POD: Final = Kind("Pod", "CoreV1Api", "pod", "pods")
POD_LOG: Final = Kind("Pod", "CoreV1Api", "pod_log", "pods", subresource="log")
