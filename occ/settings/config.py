"""Settings: every knob of occ, read once from the environment (and an optional YAML file).

The only module that reads ``os.environ``; everything else receives a ``Settings``, a frozen
pydantic-settings model. Every value is type-checked wherever it comes from; a bad one is an
``errors.InvalidSettings`` naming its key (the variable or the YAML key), never its value.

``Settings.from_env`` layers, weakest first: the defaults, the ``DATABASE_URL`` / ``REDIS_URL``
fallbacks, the YAML file in ``OCC_CONFIG_PATH``, and the ``OCC_*`` variables (a secret's may be
given as ``<variable>_FILE``, a file holding it). ``Settings(...)`` takes explicit values only.

Each field is declared once, with everything said about it: its type, its default, its variable
(``Annotated[..., Variable(...)]``; a field without one is set in the YAML file only) and its
description (the docstring under it). ``occ.settings.reference`` writes the documentation from
them.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Final

import pydantic
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from occ.foundation import errors
from occ.settings import sign_in
from occ.settings import sources as settings_sources
from occ.settings.sources import Variable

PRODUCTION_KEY_MIN_BYTES = 32
"""Shortest API-key pepper and secret key a production process accepts."""

_RATE = re.compile(r"[1-9][0-9]{0,8}/(second|minute|hour)")
RATE_LIMITS: Final = (
    "rate_limit_failed_auth",
    "rate_limit_per_principal",
    "rate_limit_per_address",
)
"""The settings that are rates (``N/minute``) or ``off``."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""Values of ``log_level``."""

KUBERNETES_INSTALLATIONS = ("cluster", "tenant-scoped")
"""Values of ``kubernetes_installation``."""
TOKEN_LIFETIME_S = (600, 86_400)
"""Bounds of ``kubernetes_token_lifetime_s``: the API server's shortest, and a day."""
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")

_HIDDEN = frozenset(
    {
        "api_key_pepper",
        "secret_key",
        "fingerprint_key",
        "auth_secret",
        "auth_oidc_client_secret",
        "auth_github_client_secret",
        "auth_google_client_secret",
    }
)
DEFAULT_OBSERVATION_INTERVAL_MS: Final = {"kubernetes": 60_000}
"""The drivers' own observation intervals where they differ from 30 s."""
_PASSWORD_SCHEMES = ("postgresql", "postgres", "redis", "rediss")
_POSITIVE = (
    "lease_ms",
    "dispatch_lease_ms",
    "max_attempts",
    "convergence_timeout_ms",
    "claim_interval_ms",
    "recovery_interval_ms",
    "work_retention_succeeded_days",
    "work_retention_failed_days",
    "prune_interval_ms",
    "max_in_flight",
    "unready_recheck_ms",
    "database_timeout_ms",
    "kubernetes_request_timeout_ms",
    "kubernetes_qps",
    "kubernetes_burst",
    "docker_request_timeout_ms",
    "docker_memory_bytes",
    "docker_nano_cpus",
    "docker_pids_limit",
    "startup_wait_ms",
    "ssh_connect_timeout_ms",
    "api_header_timeout_ms",
    "api_read_timeout_ms",
    "auth_session_idle_ms",
    "auth_session_max_ms",
)


class Settings(BaseSettings):
    """Frozen configuration of one occ process."""

    model_config = SettingsConfigDict(
        frozen=True, strict=True, extra="forbid", use_attribute_docstrings=True
    )

    database_url: Annotated[
        str, Variable("OCC_DATABASE_URL", file=True, fallback="DATABASE_URL")
    ] = "postgresql+psycopg://occ_app@127.0.0.1:5432/occ"
    """Database of the API and workers (role ``occ_app``). A ``postgres://`` or
    ``postgresql://`` URL means ``postgresql+psycopg://``."""

    migration_database_url: Annotated[
        str | None, Variable("OCC_MIGRATION_DATABASE_URL", file=True)
    ] = None
    """Owner connection for migrations and ``occ bootstrap --recover-admin`` (unset: the
    database of the API and workers)."""

    broker_url: Annotated[str, Variable("OCC_BROKER_URL", file=True, fallback="REDIS_URL")] = (
        "redis://127.0.0.1:6379/0"
    )
    """Celery broker."""

    platform: Annotated[str | None, Variable("OCC_PLATFORM", fallback="DYNO")] = None
    """The hosting platform this process runs on, any name (unset: none; Heroku's ``DYNO``, set
    on every dyno, counts): on one the development pepper and secret key are refused whatever
    ``OCC_ENV`` says."""

    environment: Annotated[str, Variable("OCC_ENV")] = "development"
    """``development`` or ``production``. Production refuses the development pepper and secret
    key, keys shorter than 32 bytes, and the ``local`` driver."""

    lease_ms: Annotated[int, Variable("OCC_WORKER_LEASE_DURATION_MS")] = 15_000
    """Run lease of a started claim. It is renewed every third of it and before each effect."""

    dispatch_lease_ms: Annotated[int, Variable("OCC_DISPATCH_LEASE_MS")] = 30_000
    """Lease of a dispatched claim that has not started yet (also the expiry of its
    ``occ.run_work`` message)."""

    max_attempts: Annotated[int, Variable("OCC_WORKER_MAX_ATTEMPTS")] = 5
    """Claims an item may use before it fails."""

    convergence_timeout_ms: Annotated[int, Variable("OCC_WORKER_CONVERGENCE_TIMEOUT_MS")] = 900_000
    """Age after which pending work fails (``CONVERGENCE_DEADLINE_EXCEEDED``)."""

    claim_interval_ms: Annotated[int, Variable("OCC_CLAIM_INTERVAL_MS")] = 2_000
    """Beat period of ``occ.claim``."""

    recovery_interval_ms: Annotated[int, Variable("OCC_RECOVERY_INTERVAL_MS")] = 5_000
    """Beat period of ``occ.recover_stale``."""

    work_retention_succeeded_days: Annotated[int, Variable("OCC_WORK_RETENTION_SUCCEEDED_DAYS")] = 7
    """Days a succeeded work item is kept after it finished; ``occ.prune`` removes it then,
    unless it is the newest of its Agent or Namespace, kind and outcome, or the deployment of
    an active revision."""

    work_retention_failed_days: Annotated[int, Variable("OCC_WORK_RETENTION_FAILED_DAYS")] = 30
    """Days a failed work item is kept after it finished (with the same exceptions as
    ``OCC_WORK_RETENTION_SUCCEEDED_DAYS``)."""

    prune_interval_ms: Annotated[int, Variable("OCC_PRUNE_INTERVAL_MS")] = 60_000
    """Beat period of ``occ.prune``: each run removes expired work history and idempotency
    records in batches of a few hundred rows, each its own short transaction."""

    max_in_flight: Annotated[int, Variable("OCC_MAX_IN_FLIGHT")] = 64
    """Most items claimed at once across the fleet."""

    unready_recheck_ms: Annotated[int, Variable("OCC_UNREADY_RECHECK_MS")] = 500
    """Delay before an unready revision is checked again."""

    database_timeout_ms: Annotated[int, Variable("OCC_WORKER_DATABASE_TIMEOUT_MS")] = 60_000
    """Statement timeout of worker connections (capped at the lease)."""

    api_key_pepper: Annotated[str, Variable("OCC_API_KEY_PEPPER", file=True)] = "development-pepper"
    """Server secret keying API-key hashes; set it in production. A new pepper invalidates
    every API key."""

    secret_key: Annotated[str, Variable("OCC_SECRET_KEY", file=True)] = pydantic.Field(
        default="development-secret-key"
    )
    """Key protecting stored Secret values; set it in production."""

    fingerprint_key: Annotated[str | None, Variable("OCC_FINGERPRINT_KEY", file=True)] = None
    """Key of the credential fingerprints occ shows (a gateway's ``/healthz``, a Kubernetes
    annotation): an HMAC, never a plain hash (unset: derived from ``OCC_SECRET_KEY``). Set a
    new one to rotate: every fingerprint changes, annotations at the next observation, a
    gateway's at its next start."""

    auth_secret: Annotated[str | None, Variable("OCC_AUTH_SECRET", file=True)] = None
    """Server secret keying user-session hashes, CSRF tokens and the sign-in state cookie; at
    least 32 characters. Required when a sign-in provider is set (unset: no user sessions).
    A new secret signs every user out."""

    auth_base_url: Annotated[str | None, Variable("OCC_AUTH_BASE_URL")] = None
    """The API's public origin (``https://occ.example.com``), which providers redirect back
    to and which decides the session cookie's ``Secure`` flag. Required when a sign-in
    provider is set; in production HTTPS unless the host is loopback, in development a
    loopback host (unset: no user sessions)."""

    auth_oidc_discovery_url: Annotated[str | None, Variable("OCC_AUTH_OIDC_DISCOVERY_URL")] = None
    """OpenID Connect discovery document of a company issuer
    (``https://id.example.com/.well-known/openid-configuration``; unset: no OIDC sign-in)."""

    auth_oidc_client_id: Annotated[str | None, Variable("OCC_AUTH_OIDC_CLIENT_ID")] = None
    """Client id occ is registered with at the OIDC issuer (unset: no OIDC sign-in)."""

    auth_oidc_client_secret: Annotated[
        str | None, Variable("OCC_AUTH_OIDC_CLIENT_SECRET", file=True)
    ] = None
    """Client secret of the OIDC registration (unset: a public client, PKCE only)."""

    auth_github_client_id: Annotated[str | None, Variable("OCC_AUTH_GITHUB_CLIENT_ID")] = None
    """Client id of occ's GitHub OAuth app (unset: no GitHub sign-in)."""

    auth_github_client_secret: Annotated[
        str | None, Variable("OCC_AUTH_GITHUB_CLIENT_SECRET", file=True)
    ] = None
    """Client secret of occ's GitHub OAuth app; required with its client id."""

    auth_google_client_id: Annotated[str | None, Variable("OCC_AUTH_GOOGLE_CLIENT_ID")] = None
    """Client id of occ's Google OAuth client (unset: no Google sign-in)."""

    auth_google_client_secret: Annotated[
        str | None, Variable("OCC_AUTH_GOOGLE_CLIENT_SECRET", file=True)
    ] = None
    """Client secret of occ's Google OAuth client; required with its client id."""

    auth_session_idle_ms: Annotated[int, Variable("OCC_AUTH_SESSION_IDLE_MS")] = 7_200_000
    """A user session unused this long ends (it is refreshed at most once a minute)."""

    auth_session_max_ms: Annotated[int, Variable("OCC_AUTH_SESSION_MAX_MS")] = 43_200_000
    """A user session ends this long after sign-in, however much it is used."""

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

    secret_driver: Annotated[str, Variable("OCC_SECRET_DRIVER")] = "sealed"  # noqa: S105
    """Where Secret values live: ``sealed`` (in their rows, sealed with the secret key) or
    ``kubernetes`` (tenant-local Kubernetes Secrets)."""

    configuration_driver: Annotated[str, Variable("OCC_CONFIGURATION_DRIVER")] = "database"
    """Where Configuration documents live: ``database`` (their rows) or ``filesystem``
    (development only, under the development configuration root)."""

    development_configuration_root: Annotated[
        str | None, Variable("OCC_DEVELOPMENT_CONFIGURATION_ROOT")
    ] = None
    """Root of the ``filesystem`` Configuration Driver, which only the API writes."""

    lifecycle_hook_owners: Annotated[str | None, Variable("OCC_LIFECYCLE_HOOK_OWNERS")] = None
    """Drivers that own lifecycle hooks, in order, as comma-separated capabilities
    (``configuration``, ``sandbox``, ``iam``; unset: the selected ones with hooks, in that
    order); an unavailable one stops the process at start-up."""

    sandbox_driver: Annotated[str | None, Variable("OCC_SANDBOX_DRIVER")] = None
    """Sandbox Driver: ``reference`` (unset: none)."""

    sandbox_egress_allow: list[str] | None = None
    """Host names the ``reference`` Sandbox Driver pins as the egress allow-list."""

    iam_hook: Annotated[str | None, Variable("OCC_IAM_HOOK")] = None
    """IAM lifecycle hook: ``runtime-identities`` (unset: none)."""

    iam_identity_root: Annotated[str, Variable("OCC_IAM_IDENTITY_ROOT")] = ".occ/identities"
    """Ledger of the runtime identities the IAM hook issued (shared by the workers)."""

    account_backend: Annotated[str | None, Variable("OCC_ACCOUNT_BACKEND")] = None
    """Account Backend that issues managed accounts: ``standin`` (unset: none, and a
    ``managedAccount`` harness source is refused).

    ``standin`` keeps its accounts in ``account_backend_root`` and is for development and tests;
    production refuses it."""

    account_backend_root: Annotated[str, Variable("OCC_ACCOUNT_BACKEND_ROOT")] = ".occ/accounts"
    """Directory of the ``standin`` account Backend (shared by the API and the workers)."""

    ssh_hosts: list[dict[str, Any]] | None = None
    """Host pool of the ``ssh`` driver: ``name``, ``host``, ``port``, ``user``,
    ``private_key_file``, ``host_key`` (pinned), ``init``, ``bind`` (docs/ssh.md)."""

    ssh_root: Annotated[str, Variable("OCC_SSH_ROOT")] = "/var/lib/occ"
    """Directory of occ's files on every SSH host."""

    ssh_connect_timeout_ms: Annotated[int, Variable("OCC_SSH_CONNECT_TIMEOUT_MS")] = 10_000
    """Timeout of one SSH connection or command."""

    ssh_gateway_command: list[str] | None = None
    """Gateway command on the SSH hosts (unset: the stand-in gateway occ installs there)."""

    metrics_port: Annotated[int | None, Variable("OCC_METRICS_PORT")] = None
    """Port of a worker's Prometheus listener (unset: no listener)."""

    metrics_address: Annotated[str, Variable("OCC_METRICS_ADDRESS")] = "127.0.0.1"
    """Address a worker's Prometheus listener binds."""

    worker_readiness_path: Annotated[str | None, Variable("OCC_WORKER_READINESS_PATH")] = None
    """Marker file a worker writes once its start-up checks passed and removes at shutdown
    (unset: none)."""

    log_level: Annotated[str, Variable("OCC_LOG_LEVEL")] = "INFO"
    """Threshold of every process's logs (occ's, Celery's, gunicorn's): ``DEBUG``, ``INFO``,
    ``WARNING``, ``ERROR`` or ``CRITICAL``, in any case."""

    startup_wait_ms: Annotated[int, Variable("OCC_STARTUP_WAIT_MS")] = 120_000
    """How long the API (gunicorn's master), the workers and beat wait at start-up for a
    migrated, bootstrapped database before they exit (status 3)."""

    api_header_timeout_ms: Annotated[int, Variable("OCC_API_HEADER_TIMEOUT_MS")] = 10_000
    """How long the API waits for a request's line and header fields (and for the next request
    on a kept-alive connection); a connection that has not sent them by then is closed."""

    api_read_timeout_ms: Annotated[int, Variable("OCC_API_READ_TIMEOUT_MS")] = 30_000
    """How long one read of a request's body, or one write of its answer, may wait for the
    client before the connection is closed."""

    api_not_found_floor_ms: Annotated[int, Variable("OCC_API_NOT_FOUND_FLOOR_MS")] = 50
    """Shortest time an authenticated request answered 404 takes: a resource the caller may not
    see and one that does not exist answer alike, in time too (0: no floor)."""

    rate_limit_failed_auth: Annotated[str | None, Variable("OCC_RATE_LIMIT_FAILED_AUTH")] = (
        "20/minute"
    )
    """Failed authentications one client address may make (``N/second``, ``N/minute`` or
    ``N/hour``) before the API answers it 429 ``RATE_LIMITED`` until the window ends, kept in
    Redis so every API process shares the count (``off``: no limit)."""

    rate_limit_per_principal: Annotated[str | None, Variable("OCC_RATE_LIMIT_PER_PRINCIPAL")] = (
        "600/minute"
    )
    """Requests one authenticated principal may make (its API keys and sessions together,
    ``N/second``, ``N/minute`` or ``N/hour``) before the API answers it 429 ``RATE_LIMITED``
    until the window ends (``off``: no limit)."""

    rate_limit_per_address: Annotated[str | None, Variable("OCC_RATE_LIMIT_PER_ADDRESS")] = (
        "1200/minute"
    )
    """Requests one client address may make, with credentials or without, before the API
    answers it 429 ``RATE_LIMITED`` until the window ends (``off``: no limit); ``/healthz``
    and ``/metrics`` are not counted. Behind a proxy that does not pass the client's address,
    every client shares the proxy's."""

    rate_limit_storage_url: Annotated[
        str | None, Variable("OCC_RATE_LIMIT_STORAGE_URL", file=True)
    ] = None
    """Redis the rate limits are counted in (unset: the broker's)."""

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except pydantic.ValidationError as exc:
            raise _invalid(exc, {}) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # explicit values only: the environment is read by from_env, from the mapping it is given
        return (init_settings,)

    @property
    def owner_database_url(self) -> str:
        """The URL migrations run with."""
        return self.migration_database_url or self.database_url

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from the environment (``os.environ`` unless given), as layered above."""
        env = os.environ if environ is None else environ
        sources: list[settings_sources.Source] = [settings_sources.FallbackSource(cls, env)]
        if env.get("OCC_CONFIG_PATH"):
            sources.append(settings_sources.YamlSource(cls, Path(env["OCC_CONFIG_PATH"])))
        sources.append(settings_sources.EnvironmentSource(cls, env))
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        for source in sources:
            values.update(source())
            origins.update(source.origins)
        try:
            return cls.model_validate(values)
        except pydantic.ValidationError as exc:
            raise _invalid(exc, origins) from None

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed (checked like any settings)."""
        return type(self)(**{**self.model_dump(), **changes})

    @pydantic.field_validator("database_url", "migration_database_url")
    @classmethod
    def _use_psycopg(cls, url: str | None) -> str | None:
        # postgres:// (Heroku) and postgresql:// name no driver: occ's is psycopg 3
        if url is None:
            return None
        scheme, separator, rest = url.partition("://")
        if separator and scheme.lower() in ("postgres", "postgresql"):
            return f"postgresql+psycopg://{rest}"
        return url

    @pydantic.field_validator("log_level")
    @classmethod
    def _known_level(cls, level: str) -> str:
        if level.upper() not in LOG_LEVELS:
            raise errors.InvalidSettings.at(
                ("log_level",), f"must be one of {', '.join(LOG_LEVELS)}"
            )
        return level.upper()

    @pydantic.model_validator(mode="after")
    def _work_together(self) -> Settings:
        """Reject settings that cannot work together."""
        if self.environment not in ("development", "production"):
            raise errors.InvalidSettings.at(("environment",), "must be development or production")
        for name in _POSITIVE:
            if getattr(self, name) <= 0:
                raise errors.InvalidSettings.at((name,), "must be a positive integer")
        for optional in ("maintenance_interval_ms", "observer_tick_ms"):
            if getattr(self, optional) is not None and getattr(self, optional) <= 0:
                raise errors.InvalidSettings.at((optional,), "must be a positive integer")
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
        for name in RATE_LIMITS:
            rate = getattr(self, name)
            if rate not in (None, "off") and not _RATE.fullmatch(rate or ""):
                raise errors.InvalidSettings.at(
                    (name,), "must be N/second, N/minute or N/hour (N >= 1), or off"
                )
        if self.api_not_found_floor_ms < 0:
            raise errors.InvalidSettings.at(("api_not_found_floor_ms",), "must not be negative")
        if self.local_effect_delay_ms < 0:
            raise errors.InvalidSettings.at(("local_effect_delay_ms",), "must not be negative")
        if not self.database_url.startswith(("postgresql", "postgres")):
            raise errors.InvalidSettings.at(("database_url",), "must be a PostgreSQL URL")
        if self.fingerprint_key is not None and not self.fingerprint_key:
            raise errors.InvalidSettings.at(("fingerprint_key",), "must not be empty")
        sign_in.check(self)
        if self.platform is not None:
            for name in ("api_key_pepper", "secret_key"):
                if getattr(self, name).startswith("development-"):
                    raise errors.InvalidSettings.at(
                        (name,), "must be set on a hosting platform (OCC_PLATFORM or DYNO is set)"
                    )
        if self.environment == "production":
            for name in ("api_key_pepper", "secret_key"):
                if getattr(self, name).startswith("development-"):
                    raise errors.InvalidSettings.at((name,), "must be set in production")
                if len(getattr(self, name).encode()) < PRODUCTION_KEY_MIN_BYTES:
                    raise errors.InvalidSettings.at(
                        (name,),
                        f"must be at least {PRODUCTION_KEY_MIN_BYTES} bytes in production",
                    )
            if (
                self.fingerprint_key is not None
                and len(self.fingerprint_key.encode()) < PRODUCTION_KEY_MIN_BYTES
            ):
                raise errors.InvalidSettings.at(
                    ("fingerprint_key",),
                    f"must be at least {PRODUCTION_KEY_MIN_BYTES} bytes in production",
                )
            if self.compute_driver == "local":
                raise errors.InvalidSettings.at(
                    ("compute_driver",),
                    "the local driver runs gateways on this machine and is for development only;"
                    " choose docker or kubernetes in production",
                )
        return self

    def weaknesses(self) -> tuple[errors.FieldError, ...]:
        """What makes this configuration weaker than production needs (``occ doctor``), each at
        its setting, never with its value."""
        found = []
        if self.environment != "production":
            found.append(
                errors.FieldError(
                    ("environment",), "is not production: development defaults are accepted"
                )
            )
        for name in ("api_key_pepper", "secret_key"):
            value = getattr(self, name)
            if value.startswith("development-"):
                found.append(errors.FieldError((name,), "is the development default"))
            elif len(value.encode()) < PRODUCTION_KEY_MIN_BYTES:
                found.append(
                    errors.FieldError((name,), f"is shorter than {PRODUCTION_KEY_MIN_BYTES} bytes")
                )
        if self.fingerprint_key is None:
            found.append(
                errors.FieldError(
                    ("fingerprint_key",),
                    "is unset: derived from the secret key, so rotating one rotates both",
                )
            )
        if self.compute_driver == "local":
            found.append(
                errors.FieldError(("compute_driver",), "is local: gateways run on this machine")
            )
        if self.api_not_found_floor_ms == 0:
            found.append(
                errors.FieldError(
                    ("api_not_found_floor_ms",), "is 0: a 404's timing may tell hidden from missing"
                )
            )
        for name in ("database_url", "migration_database_url", "broker_url"):
            url = getattr(self, name)
            if url and _expects_password(url) and not _has_password(url):
                found.append(errors.FieldError((name,), "has no password"))
        return tuple(found)

    @property
    def credential_fingerprint_key(self) -> str:
        """``fingerprint_key``, or a key derived from ``secret_key`` when it is unset."""
        if self.fingerprint_key is not None:
            return self.fingerprint_key
        digest = hmac.new(self.secret_key.encode(), b"occ-credential-fingerprints", hashlib.sha256)
        return digest.hexdigest()

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
    def sign_in_providers(self) -> tuple[str, ...]:
        """The sign-in providers set (``oidc``, ``github``, ``google``), in that order."""
        return sign_in.providers(self)

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

    def startup_warnings(self) -> tuple[errors.FieldError, ...]:
        """What a production process should warn about once at start-up (never a value).

        A database or broker URL whose scheme normally authenticates with a password but
        carries none works (trust, peer or an unprotected Redis) and is worth a warning.
        """
        if self.environment != "production":
            return ()
        found = []
        for name in ("database_url", "migration_database_url", "broker_url"):
            url = getattr(self, name)
            if url and _expects_password(url) and not _has_password(url):
                found.append(
                    errors.FieldError((name,), "has no password; is the service protected?")
                )
        return tuple(found)

    def __repr_args__(self) -> Iterator[tuple[str, Any]]:
        # credentials never reach a log or a configuration dump: peppers and keys are hidden,
        # URL passwords masked
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in _HIDDEN:
                value = "***"
            elif isinstance(value, str):
                value = mask_url_password(value)
            yield name, value

    def __repr__(self) -> str:
        return f"Settings({', '.join(f'{name}={value!r}' for name, value in self.__repr_args__())})"

    __str__ = __repr__


def _invalid(exc: pydantic.ValidationError, origins: Mapping[str, str]) -> errors.InvalidSettings:
    """``exc`` as ``InvalidSettings``: each error at the key it came from, without the input."""
    found = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        where = [str(part) for part in error["loc"]]
        path = (origins.get(where[0], where[0]), *where[1:]) if where else ()
        message = error["msg"][:1].lower() + error["msg"][1:]
        found.append(errors.FieldError(path, message))
    return errors.InvalidSettings("; ".join(f"{e.pointer}: {e.message}" for e in found), found)


def mask_url_password(url: str) -> str:
    """``url`` with the password of its user part replaced by ``***`` (other text unchanged)."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    # the last '@' ends the user part: a password may itself hold an '@'
    user_part, at, host_part = rest.rpartition("@")
    if not at:
        return url
    user, colon, _password = user_part.partition(":")
    if not colon:
        return url
    return f"{scheme}://{user}:***@{host_part}"


def _scheme(url: str) -> str:
    return url.partition("://")[0].split("+", 1)[0].lower()


def _expects_password(url: str) -> bool:
    if _scheme(url) not in _PASSWORD_SCHEMES:
        return False
    # PostgreSQL over a unix socket (no host, or ``host=/path``) authenticates by peer
    rest = url.partition("://")[2]
    host_part = rest.rpartition("@")[2]
    return not (host_part.startswith("/") or "host=/" in url or host_part.split("?")[0] == "")


def _has_password(url: str) -> bool:
    user_part, at, _ = url.partition("://")[2].rpartition("@")
    return bool(at) and ":" in user_part and user_part.partition(":")[2] != ""
