"""Where settings come from: the ``OCC_*`` variables (a secret's may name a file holding it),
the ``DATABASE_URL`` / ``REDIS_URL`` fallbacks, and the YAML file in ``OCC_CONFIG_PATH``.

Each source is a pydantic-settings source of raw values that also records the key each value
came from (``origins``), so that ``occ.settings.config`` can name that key when a value is refused.
Errors name a variable or a file, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from occ.foundation import errors

_DIGITS = re.compile(r"[0-9]{1,15}")

ENVIRONMENT: dict[str, str] = {
    "database_url": "OCC_DATABASE_URL",
    "migration_database_url": "OCC_MIGRATION_DATABASE_URL",
    "broker_url": "OCC_BROKER_URL",
    "environment": "OCC_ENV",
    "lease_ms": "OCC_WORKER_LEASE_DURATION_MS",
    "dispatch_lease_ms": "OCC_DISPATCH_LEASE_MS",
    "max_attempts": "OCC_WORKER_MAX_ATTEMPTS",
    "convergence_timeout_ms": "OCC_WORKER_CONVERGENCE_TIMEOUT_MS",
    "claim_interval_ms": "OCC_CLAIM_INTERVAL_MS",
    "recovery_interval_ms": "OCC_RECOVERY_INTERVAL_MS",
    "max_in_flight": "OCC_MAX_IN_FLIGHT",
    "unready_recheck_ms": "OCC_UNREADY_RECHECK_MS",
    "database_timeout_ms": "OCC_WORKER_DATABASE_TIMEOUT_MS",
    "api_key_pepper": "OCC_API_KEY_PEPPER",
    "secret_key": "OCC_SECRET_KEY",
    "compute_driver": "OCC_COMPUTE_DRIVER",
    "local_root": "OCC_LOCAL_ROOT",
    "local_effect_delay_ms": "OCC_LOCAL_EFFECT_DELAY_MS",
    "maintenance_interval_ms": "OCC_MAINTENANCE_INTERVAL_MS",
    "kubernetes_kubeconfig": "OCC_KUBERNETES_KUBECONFIG",
    "kubernetes_context": "OCC_KUBERNETES_CONTEXT",
    "kubernetes_gateway_image": "OCC_KUBERNETES_GATEWAY_IMAGE",
    "kubernetes_storage_class": "OCC_KUBERNETES_STORAGE_CLASS",
    "kubernetes_namespace_prefix": "OCC_KUBERNETES_NAMESPACE_PREFIX",
    "kubernetes_request_timeout_ms": "OCC_KUBERNETES_REQUEST_TIMEOUT_MS",
    "docker_host": "OCC_DOCKER_HOST",
    "docker_gateway_image": "OCC_DOCKER_GATEWAY_IMAGE",
    "docker_request_timeout_ms": "OCC_DOCKER_REQUEST_TIMEOUT_MS",
    "docker_memory_bytes": "OCC_DOCKER_MEMORY_BYTES",
    "docker_nano_cpus": "OCC_DOCKER_NANO_CPUS",
    "docker_pids_limit": "OCC_DOCKER_PIDS_LIMIT",
    "metrics_port": "OCC_METRICS_PORT",
    "metrics_address": "OCC_METRICS_ADDRESS",
    "worker_readiness_path": "OCC_WORKER_READINESS_PATH",
    "log_level": "OCC_LOG_LEVEL",
    "startup_wait_ms": "OCC_STARTUP_WAIT_MS",
}
"""Setting -> its variable."""

_FILE_VARIANTS = frozenset(
    {"api_key_pepper", "secret_key", "database_url", "migration_database_url", "broker_url"}
)
"""Settings whose variable may instead name a file holding the value (``<variable>_FILE``)."""

_FALLBACKS = {"database_url": "DATABASE_URL", "broker_url": "REDIS_URL"}
"""Conventional variables (Heroku add-ons) used when occ's own setting is absent."""


class Source(PydanticBaseSettingsSource):
    """Values of some settings, and the key each came from (``origins``: field -> the
    variable or YAML key)."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        self.origins: dict[str, str] = {}

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # __call__ reads every setting at once

    def __call__(self) -> dict[str, Any]:
        raise NotImplementedError


class EnvironmentSource(Source):
    """The ``OCC_*`` variables of one environment, and the ``_FILE`` variants of secrets."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for name, variable in ENVIRONMENT.items():
            found = self._raw(variable, secret=name in _FILE_VARIANTS)
            if found is None:
                continue
            raw, origin = found
            values[name] = _parse(origin, raw) if _is_integer(self.settings_cls, name) else raw
            self.origins[name] = origin
        return values

    def _raw(self, variable: str, *, secret: bool) -> tuple[str, str] | None:
        """The text of ``variable`` and the variable it came from (``<variable>_FILE``?)."""
        raw = self.environ.get(variable) or None
        named = (self.environ.get(f"{variable}_FILE") or None) if secret else None
        if named is None:
            return None if raw is None else (raw, variable)
        if raw is not None:
            raise errors.InvalidSettings.at(
                (variable,), f"set either {variable} or {variable}_FILE, not both"
            )
        return _read_secret(f"{variable}_FILE", Path(named)), f"{variable}_FILE"


class FallbackSource(Source):
    """``DATABASE_URL`` and ``REDIS_URL``, the weakest source after the defaults."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.environ = environ

    def __call__(self) -> dict[str, Any]:
        found = {name: self.environ.get(variable) for name, variable in _FALLBACKS.items()}
        self.origins = {name: _FALLBACKS[name] for name, value in found.items() if value}
        return {name: value for name, value in found.items() if value}


class YamlSource(Source):
    """The mapping in the YAML file ``OCC_CONFIG_PATH`` names; unknown keys are refused."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        super().__init__(settings_cls)
        self.path = path

    def __call__(self) -> dict[str, Any]:
        try:
            document = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeError, yaml.YAMLError) as exc:
            raise errors.InvalidSettings.at(
                ("OCC_CONFIG_PATH",), f"cannot read settings file: {exc}"
            ) from None
        if not isinstance(document, dict):
            raise errors.InvalidSettings.at(
                ("OCC_CONFIG_PATH",), "settings file must hold a mapping"
            )
        unknown = sorted(str(key) for key in set(document) - set(self.settings_cls.model_fields))
        if unknown:
            raise errors.InvalidSettings.at((unknown[0],), "unknown setting")
        self.origins = {name: name for name in document}
        return document


def _is_integer(settings_cls: type[BaseSettings], name: str) -> bool:
    annotation = settings_cls.model_fields[name].annotation
    return int in (annotation, *get_args(annotation))


def _parse(variable: str, raw: str) -> int:
    if not _DIGITS.fullmatch(raw):
        raise errors.InvalidSettings.at((variable,), "must be an integer written as digits")
    return int(raw)


def _read_secret(variable: str, path: Path) -> str:
    """The content of the file ``variable`` names, less its trailing newline (never shown)."""
    try:
        content = path.read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise errors.InvalidSettings.at((variable,), f"cannot read the file: {reason}") from None
    except UnicodeError:
        raise errors.InvalidSettings.at((variable,), "the file is not UTF-8 text") from None
    value = content.removesuffix("\n").removesuffix("\r")
    if not value:
        raise errors.InvalidSettings.at((variable,), "the file is empty")
    return value
