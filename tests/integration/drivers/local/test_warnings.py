"""The ``local`` driver's readiness carries the startup warnings its real gateway reports."""

from __future__ import annotations

from pathlib import Path

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import ids
from tests.integration.drivers.local import support


def test_a_ready_gateway_reports_the_warnings_it_started_with(root: Path) -> None:
    driver = LocalComputeDriver(root)
    document = {"model": "m", "plugins": ["voice", "memory"]}
    warned = support.revision(ids.new("agent"), document=document)
    plain = support.revision(ids.new("agent"), document={"model": "m"})

    ready = support.until_ready(driver, warned)

    assert ready.warnings == (
        base.StartupWarning("PLUGIN_UNAVAILABLE", "memory"),
        base.StartupWarning("PLUGIN_UNAVAILABLE", "voice"),
    )
    _, health = support.get(ready.details["endpoint"], "/healthz")
    assert health["warnings"] == [
        {"code": "PLUGIN_UNAVAILABLE", "detail": "memory"},
        {"code": "PLUGIN_UNAVAILABLE", "detail": "voice"},
    ]
    assert support.until_ready(driver, plain).warnings == ()
