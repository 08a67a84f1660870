"""The Compute Drivers' settings: which driver, and the ``local``, ``kubernetes``, ``docker``
and ``ssh`` drivers' own; how often running Agents are observed."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Final

import pydantic

from occ.foundation import errors
from occ.settings.sources import Variable
from occ.settings.topic import Topic, require_positive

KUBERNETES_INSTALLATIONS = ("cluster", "tenant-scoped")
"""Values of ``kubernetes_installation``."""
TOKEN_LIFETIME_S = (600, 86_400)
"""Bounds of ``kubernetes_token_lifetime_s``: the API server's shortest, and a day."""
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DEFAULT_OBSERVATION_INTERVAL_MS: Final = {"kubernetes": 60_000}
"""The drivers' own observation intervals where they differ from 30 s."""
_POSITIVE: Final = (
    "kubernetes_request_timeout_ms",
    "kubernetes_qps",
    "kubernetes_burst",
    "docker_request_timeout_ms",
    "docker_memory_bytes",
    "docker_nano_cpus",
    "docker_pids_limit",
    "ssh_connect_timeout_ms",
)


class Compute(Topic):
    """The Compute Driver and its settings."""

    compute_driver: Annotated[str, Variable("OCC_COMPUTE_DRIVER")] = "local"
    """Compute Driver of this installation: ``local``, ``docker``, ``kubernetes`` or ``ssh``."""

    local_root: Annotated[str, Variable("OCC_LOCAL_ROOT")] = ".occ/local"
    """State directory of the ``local`` driver."""

    local_effect_delay_ms: Annotated[int, Variable("OCC_LOCAL_EFFECT_DELAY_MS")] = 0
    """Simulated duration of each ``local`` Compute effect (demos, fault drills); 0 or more."""

    maintenance_interval_ms: Annotated[int | None, Variable("OCC_MAINTENANCE_INTERVAL_MS")] = None
    """How often every running Agent's active revision is observed (unset: the driver's own,
    30 s for ``local`` and ``docker``, 60 s for ``kubernetes``); a runtime found different is
    repaired."""

    observer_tick_ms: Annotated[int | None, Variable("OCC_OBSERVER_TICK_MS")] = None
    """Beat period of ``occ.observe_runtimes``: each tick observes the Agents that fell due
    since the last (a tick that could not take them all is followed at once by another).
    Unset: an eighth of the observation interval, at least 1 s and at most 10 s (7.5 s at
    60 s), so that an idle fleet's fixed cost of one message and two commits a tick is spread
    over many Agents; a runtime found different is then seen at most that much later."""

    kubernetes_kubeconfig: Annotated[str | None, Variable("OCC_KUBERNETES_KUBECONFIG")] = None
    """Kubeconfig of the ``kubernetes`` driver's cluster (unset: the in-cluster configuration
    when there is one, else the default kubeconfig)."""

    kubernetes_context: Annotated[str | None, Variable("OCC_KUBERNETES_CONTEXT")] = None
    """Context of that kubeconfig (unset: its current context)."""

    kubernetes_gateway_image: Annotated[str | None, Variable("OCC_KUBERNETES_GATEWAY_IMAGE")] = None
    """Gateway image of the ``kubernetes`` driver (required by that driver)."""

    kubernetes_storage_class: Annotated[str | None, Variable("OCC_KUBERNETES_STORAGE_CLASS")] = None
    """StorageClass of gateway volumes (unset: the cluster's default)."""

    kubernetes_namespace_prefix: Annotated[str, Variable("OCC_KUBERNETES_NAMESPACE_PREFIX")] = (
        "occ-"
    )
    """Prefix of the Kubernetes namespaces occ creates."""

    kubernetes_request_timeout_ms: Annotated[int, Variable("OCC_KUBERNETES_REQUEST_TIMEOUT_MS")] = (
        10_000
    )
    """Timeout of one Kubernetes API request."""

    kubernetes_qps: Annotated[int, Variable("OCC_KUBERNETES_QPS")] = 50
    """Kubernetes API requests per second each worker process sends at most on average (its
    passes' reads and writes; the observation cache's lists and watches are not paced)."""

    kubernetes_burst: Annotated[int, Variable("OCC_KUBERNETES_BURST")] = 100
    """Kubernetes API requests each worker process may send at once before
    ``kubernetes_qps`` paces them."""

    kubernetes_installation: Annotated[str, Variable("OCC_KUBERNETES_INSTALLATION")] = "cluster"
    """How occ is authorized on the cluster: ``cluster`` (a ClusterRole; occ creates the
    namespaces it works in) or ``tenant-scoped`` (a Role per managed namespace, printed by
    ``occ kubernetes rbac``; occ creates no namespace and holds no cluster-wide grant)."""

    kubernetes_managed_namespaces: Annotated[
        str | None, Variable("OCC_KUBERNETES_MANAGED_NAMESPACES")
    ] = None
    """Kubernetes namespaces occ works in when ``tenant-scoped``, comma-separated (required
    then); start-up checks occ's Role in each."""

    kubernetes_token_audience: Annotated[str, Variable("OCC_KUBERNETES_TOKEN_AUDIENCE")] = (
        "occ-agent"  # noqa: S105 (an audience, not a secret)
    )
    """Audience of the projected ServiceAccount token mounted into each gateway, the Agent's
    identity a receiving service verifies with a TokenReview naming it (empty: no token)."""

    kubernetes_token_lifetime_s: Annotated[int, Variable("OCC_KUBERNETES_TOKEN_LIFETIME_S")] = 3600
    """Lifetime of that token, in seconds (600 to 86400); the kubelet renews it before it
    expires."""

    kubernetes_allowed_callers: list[dict[str, dict[str, str]]] | None = None
    """Who may reach the gateways: a list of callers, each with ``namespace`` (labels of the
    callers' namespaces) and/or ``pods`` (labels of the calling pods; alone: pods of the
    Agent's own namespace), allowed on the gateway port only (unset: nobody, the namespace's
    default deny)."""

    kubernetes_authentication_egress: Annotated[
        str | None, Variable("OCC_KUBERNETES_AUTHENTICATION_EGRESS")
    ] = None
    """CIDRs a starting gateway may reach on TCP 443 to authenticate, comma-separated, until its
    revision is active (unset: none)."""

    kubernetes_resource_quota: dict[str, str] | None = None
    """``spec.hard`` of a ResourceQuota put in every namespace occ creates (unset: none)."""

    kubernetes_limit_range: dict[str, dict[str, str]] | None = None
    """Container ``default``, ``defaultRequest`` and ``max`` of a LimitRange put in every
    namespace occ creates (unset: none)."""

    docker_host: Annotated[str | None, Variable("OCC_DOCKER_HOST")] = None
    """Engine of the ``docker`` driver (unset: ``DOCKER_HOST``, else the default socket)."""

    docker_gateway_image: Annotated[str, Variable("OCC_DOCKER_GATEWAY_IMAGE")] = (
        "occ-standin-gateway:dev"
    )
    """Gateway image of the ``docker`` driver (``scripts/build-standin-image.sh`` builds the
    stand-in)."""

    docker_request_timeout_ms: Annotated[int, Variable("OCC_DOCKER_REQUEST_TIMEOUT_MS")] = 30_000
    """Timeout of one Docker Engine request."""

    docker_memory_bytes: Annotated[int, Variable("OCC_DOCKER_MEMORY_BYTES")] = 268_435_456
    """Memory limit of a gateway container, in bytes (256 MiB)."""

    docker_nano_cpus: Annotated[int, Variable("OCC_DOCKER_NANO_CPUS")] = 500_000_000
    """CPU limit of a gateway container, in billionths of a CPU (half a CPU)."""

    docker_pids_limit: Annotated[int, Variable("OCC_DOCKER_PIDS_LIMIT")] = 128
    """Process limit of a gateway container."""

    ssh_hosts: list[dict[str, Any]] | None = None
    """Host pool of the ``ssh`` driver: ``name``, ``host``, ``port``, ``user``,
    ``private_key_file``, ``host_key`` (pinned), ``init``, ``bind`` (docs/ssh.md)."""

    ssh_root: Annotated[str, Variable("OCC_SSH_ROOT")] = "/var/lib/occ"
    """Directory of occ's files on every SSH host."""

    ssh_connect_timeout_ms: Annotated[int, Variable("OCC_SSH_CONNECT_TIMEOUT_MS")] = 10_000
    """Timeout of one SSH connection or command."""

    ssh_gateway_command: list[str] | None = None
    """Gateway command on the SSH hosts (unset: the stand-in gateway occ installs there)."""

    @pydantic.model_validator(mode="after")
    def _compute_holds(self) -> Compute:
        require_positive(self, _POSITIVE)
        for optional in ("maintenance_interval_ms", "observer_tick_ms"):
            if getattr(self, optional) is not None and getattr(self, optional) <= 0:
                raise errors.InvalidSettings.at((optional,), "must be a positive integer")
        if self.local_effect_delay_ms < 0:
            raise errors.InvalidSettings.at(("local_effect_delay_ms",), "must not be negative")
        self._kubernetes_holds()
        return self

    def _kubernetes_holds(self) -> None:
        if self.kubernetes_installation not in KUBERNETES_INSTALLATIONS:
            raise errors.InvalidSettings.at(
                ("kubernetes_installation",), "must be cluster or tenant-scoped"
            )
        if self.kubernetes_installation == "tenant-scoped" and not self.managed_namespaces:
            raise errors.InvalidSettings.at(
                ("kubernetes_managed_namespaces",),
                "must name at least one namespace when the installation is tenant-scoped",
            )
        for name in self.managed_namespaces:
            if not _DNS_LABEL.fullmatch(name):
                raise errors.InvalidSettings.at(
                    ("kubernetes_managed_namespaces",), "must be namespace names (DNS labels)"
                )
        if not TOKEN_LIFETIME_S[0] <= self.kubernetes_token_lifetime_s <= TOKEN_LIFETIME_S[1]:
            raise errors.InvalidSettings.at(
                ("kubernetes_token_lifetime_s",),
                f"must be from {TOKEN_LIFETIME_S[0]} to {TOKEN_LIFETIME_S[1]} seconds",
            )
        for caller in self.kubernetes_allowed_callers or ():
            if not caller or set(caller) - {"namespace", "pods"}:
                raise errors.InvalidSettings.at(
                    ("kubernetes_allowed_callers",),
                    "each caller names namespace and/or pods labels, nothing else",
                )
        for cidr in self.authentication_egress:
            try:
                ipaddress.ip_network(cidr)
            except ValueError:
                raise errors.InvalidSettings.at(
                    ("kubernetes_authentication_egress",), "must be CIDRs (like 10.0.0.0/8)"
                ) from None

    @property
    def observation_interval_ms(self) -> int:
        """How often the driver observes each running Agent (``maintenance_interval_ms``, or
        the driver's own default)."""
        if self.maintenance_interval_ms is not None:
            return self.maintenance_interval_ms
        return DEFAULT_OBSERVATION_INTERVAL_MS.get(self.compute_driver, 30_000)

    @property
    def observer_tick_period_ms(self) -> int:
        """Beat's period of the observer's tick (``observer_tick_ms``, or derived from the
        observation interval)."""
        if self.observer_tick_ms is not None:
            return self.observer_tick_ms
        return min(max(self.observation_interval_ms // 8, 1_000), 10_000)

    @property
    def managed_namespaces(self) -> tuple[str, ...]:
        """``kubernetes_managed_namespaces`` as names, in order, without duplicates."""
        raw = self.kubernetes_managed_namespaces or ""
        return tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))

    @property
    def authentication_egress(self) -> tuple[str, ...]:
        """``kubernetes_authentication_egress`` as CIDRs, in order, without duplicates."""
        raw = self.kubernetes_authentication_egress or ""
        return tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
