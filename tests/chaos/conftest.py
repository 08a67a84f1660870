"""The chaos suite's tiers: the quick run is part of the default suite; tests marked ``chaos``
(the long run) are left out unless the ``-m`` expression names the marker (``make chaos``)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "chaos" in (config.option.markexpr or ""):
        return
    long_runs = [item for item in items if item.get_closest_marker("chaos") is not None]
    if long_runs:
        config.hook.pytest_deselected(items=long_runs)
        items[:] = [item for item in items if item.get_closest_marker("chaos") is None]
