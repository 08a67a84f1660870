"""Compute Drivers and ``load(name, settings, hooks=...)``, which imports one lazily by name
and attaches the lifecycle hook owners selected at startup."""

from __future__ import annotations

import importlib
from typing import Final

from occ.drivers.compute import base, hooks
from occ.foundation import errors
from occ.settings.config import Settings

_DRIVERS: Final = {
    "local": "occ.drivers.compute.local:LocalComputeDriver",
    "docker": "occ.drivers.compute.docker:DockerComputeDriver",
    "kubernetes": "occ.drivers.compute.kubernetes:KubernetesComputeDriver",
    "ssh": "occ.drivers.compute.ssh:SshComputeDriver",
}


def load(
    name: str, settings: Settings, *, hooks: hooks.HookDispatcher | None = None
) -> base.ComputeDriver:
    """The Compute Driver called ``name``, built from ``settings`` with ``hooks`` attached."""
    target = _DRIVERS.get(name)
    if target is None:
        raise errors.InvalidSettings.at(
            ("compute_driver",), f"unknown compute driver; known: {sorted(_DRIVERS)}"
        )
    module_name, _, class_name = target.partition(":")
    driver_class = getattr(importlib.import_module(module_name), class_name)
    driver: base.ComputeDriver = driver_class.from_settings(settings, hooks=hooks)
    return driver
