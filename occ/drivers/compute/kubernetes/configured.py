"""The ``kubernetes`` driver's parts, read from ``Settings``: the API client (its
configuration, timeout and rate limit), how a gateway's objects are written, the namespace
policy, the network policy's options and the observation interval.
"""

from __future__ import annotations

from dataclasses import dataclass

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import (
    client,
    cluster_config,
    manifests,
    namespaces,
    policies,
    ratelimit,
)
from occ.foundation import fingerprints
from occ.settings.config import Settings


@dataclass(frozen=True)
class Parts:
    """What ``KubernetesComputeDriver`` is built from (``None``: the driver's own interval)."""

    api: client.KubernetesApi
    options: manifests.GatewayOptions
    policy: namespaces.Policy
    network: policies.NetworkOptions
    maintenance_interval_s: float | None


def parts(settings: Settings) -> Parts:
    """The driver's parts for ``settings``; ``PermanentDriverError`` when they cannot work."""
    if not settings.kubernetes_gateway_image:
        raise base.PermanentDriverError(
            cluster_config.SETTINGS_INVALID,
            "the kubernetes driver needs a gateway image (OCC_KUBERNETES_GATEWAY_IMAGE)",
        )
    if settings.kubernetes_request_timeout_ms <= 0:
        raise base.PermanentDriverError(
            cluster_config.SETTINGS_INVALID, "kubernetes_request_timeout_ms must be positive"
        )
    configuration = cluster_config.load_configuration(
        settings.kubernetes_kubeconfig, settings.kubernetes_context
    )
    api = client.KubernetesApi(
        configuration,
        timeout_s=settings.kubernetes_request_timeout_ms / 1000,
        limiter=ratelimit.TokenBucket(settings.kubernetes_qps, settings.kubernetes_burst),
    )
    return Parts(
        api=api,
        options=gateway_options(settings),
        policy=namespace_policy(settings),
        network=policies.NetworkOptions(
            callers=tuple(settings.kubernetes_allowed_callers or ()),
            authentication_egress=settings.authentication_egress,
            port=manifests.GATEWAY_PORT,
        ),
        maintenance_interval_s=(
            settings.maintenance_interval_ms / 1000 if settings.maintenance_interval_ms else None
        ),
    )


def namespace_policy(settings: Settings) -> namespaces.Policy:
    """How occ built from ``settings`` names, fills and finds the Namespaces' Kubernetes
    namespaces (the driver, and the API's log reader and Secret Driver, which only find)."""
    return namespaces.Policy(
        prefix=settings.kubernetes_namespace_prefix,
        resource_quota=settings.kubernetes_resource_quota,
        limit_range=settings.kubernetes_limit_range,
        installation=settings.kubernetes_installation,
        managed=settings.managed_namespaces,
    )


def gateway_options(settings: Settings) -> manifests.GatewayOptions:
    """How the driver built from ``settings`` writes a gateway's objects."""
    return manifests.GatewayOptions(
        image=settings.kubernetes_gateway_image or "",
        storage_class=settings.kubernetes_storage_class,
        fingerprint_key_id=fingerprints.key_id(settings.credential_fingerprint_key),
        token_audience=settings.kubernetes_token_audience,
        token_lifetime_s=settings.kubernetes_token_lifetime_s,
    )
