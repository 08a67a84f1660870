"""Compute Drivers and ``load(name, settings, hooks=...)``, which imports one lazily by name
and attaches the lifecycle hook owners selected at startup; ``logs(name, settings)``, its
runtime log reader, likewise."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Final

from occ.drivers.compute import base, hooks, runtime_logs
from occ.foundation import errors
from occ.settings.config import Settings

_DRIVERS: Final = {
    "local": "occ.drivers.compute.local:LocalComputeDriver",
    "docker": "occ.drivers.compute.docker:DockerComputeDriver",
    "kubernetes": "occ.drivers.compute.kubernetes:KubernetesComputeDriver",
    "ssh": "occ.drivers.compute.ssh:SshComputeDriver",
}

_LOG_READERS: Final = {
    "local": "occ.drivers.compute.local.logs:LocalLogs",
    "docker": "occ.drivers.compute.docker.logs:DockerLogs",
    "kubernetes": "occ.drivers.compute.kubernetes.logs:KubernetesLogs",
    "ssh": "occ.drivers.compute.ssh.logs:SshLogs",
}


def load(
    name: str, settings: Settings, *, hooks: hooks.HookDispatcher | None = None
) -> base.ComputeDriver:
    """The Compute Driver called ``name``, built from ``settings`` with ``hooks`` attached."""
    driver: base.ComputeDriver = _class_of(_DRIVERS, name).from_settings(settings, hooks=hooks)
    return driver


def logs(name: str, settings: Settings) -> runtime_logs.LogReader:
    """The runtime log reader of the Compute Driver called ``name``, built from ``settings``."""
    reader: runtime_logs.LogReader = _class_of(_LOG_READERS, name).from_settings(settings)
    return reader


def _class_of(table: Mapping[str, str], name: str) -> Any:
    """The class ``table`` names for the driver ``name`` (``module:Class``), imported now."""
    target = table.get(name)
    if target is None:
        raise errors.InvalidSettings.at(
            ("compute_driver",), f"unknown compute driver; known: {sorted(table)}"
        )
    module_name, _, class_name = target.partition(":")
    return getattr(importlib.import_module(module_name), class_name)
