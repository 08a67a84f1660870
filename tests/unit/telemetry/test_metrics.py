"""``occ.telemetry.metrics`` without a database or a socket: ``occ_build_info``."""

from __future__ import annotations

import importlib.metadata
import platform

from occ.telemetry import metrics


def _build_info_line() -> str:
    version = importlib.metadata.version("occ")
    return f'occ_build_info{{python="{platform.python_version()}",version="{version}"}} 1.0'


def test_build_info_names_the_version_and_python_once() -> None:
    text = metrics.render()[0].decode()
    assert text.count("occ_build_info{") == 1
    assert _build_info_line() in text.splitlines()
    assert "# TYPE occ_build_info gauge" in text
