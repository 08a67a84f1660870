"""The Compute Driver table: every name finds its driver class and its log reader class, and
an unknown name is refused naming the setting."""

from __future__ import annotations

import importlib

import pytest

from occ.drivers import compute
from occ.drivers.compute import runtime_logs
from occ.foundation import errors
from occ.settings.config import Settings


@pytest.mark.parametrize("name", sorted(compute._DRIVERS))
def test_every_driver_names_classes_its_package_defines(name: str) -> None:
    driver_class, reader_class = compute._DRIVERS[name]
    driver = getattr(importlib.import_module(f"occ.drivers.compute.{name}"), driver_class)
    reader = getattr(importlib.import_module(f"occ.drivers.compute.{name}.logs"), reader_class)
    assert driver.name == name
    assert callable(driver.from_settings) and callable(reader.from_settings)
    assert callable(getattr(reader, runtime_logs.LogReader.read_logs.__name__))


@pytest.mark.parametrize("build", [compute.logs, compute.load])
def test_an_unknown_driver_is_refused_at_its_setting(build: object) -> None:
    assert callable(build)
    with pytest.raises(errors.InvalidSettings) as refused:
        build("nomad", Settings())
    assert refused.value.errors[0].pointer == "/compute_driver"
    assert "local" in refused.value.errors[0].message
