"""Compute Drivers and ``load(name, settings, hooks=...)``, which imports one lazily by name
and attaches the lifecycle hook owners selected at startup; ``logs(name, settings)``, its
runtime log reader, likewise."""

from __future__ import annotations

import importlib
from typing import Any, Final

from occ.drivers.compute import base, hooks, runtime_logs
from occ.foundation import errors
from occ.settings.config import Settings

_PACKAGE: Final = "occ.drivers.compute"
_DRIVERS: Final = {
    "local": ("LocalComputeDriver", "LocalLogs"),
    "docker": ("DockerComputeDriver", "DockerLogs"),
    "kubernetes": ("KubernetesComputeDriver", "KubernetesLogs"),
    "ssh": ("SshComputeDriver", "SshLogs"),
}
"""Each driver by name: the class its package (``occ.drivers.compute.<name>``) exports, and its
log reader's class in the package's ``logs`` module."""


def load(
    name: str, settings: Settings, *, hooks: hooks.HookDispatcher | None = None
) -> base.ComputeDriver:
    """The Compute Driver called ``name``, built from ``settings`` with ``hooks`` attached."""
    driver_class, _ = _classes_of(name)
    built = _imported(f"{_PACKAGE}.{name}", driver_class)
    driver: base.ComputeDriver = built.from_settings(settings, hooks=hooks)
    return driver


def logs(name: str, settings: Settings) -> runtime_logs.LogReader:
    """The runtime log reader of the Compute Driver called ``name``, built from ``settings``."""
    _, reader_class = _classes_of(name)
    built = _imported(f"{_PACKAGE}.{name}.logs", reader_class)
    reader: runtime_logs.LogReader = built.from_settings(settings)
    return reader


def _classes_of(name: str) -> tuple[str, str]:
    """The driver and log reader class names of the driver ``name``."""
    classes = _DRIVERS.get(name)
    if classes is None:
        raise errors.InvalidSettings.at(
            ("compute_driver",), f"unknown compute driver; known: {sorted(_DRIVERS)}"
        )
    return classes


def _imported(module_name: str, class_name: str) -> Any:
    """Class ``class_name`` of module ``module_name``, imported now."""
    return getattr(importlib.import_module(module_name), class_name)
