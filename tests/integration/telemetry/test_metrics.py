"""``occ.telemetry.metrics``' listener on a real socket: it binds the configured address only."""

from __future__ import annotations

import importlib.metadata
import platform
import urllib.error
import urllib.request

import pytest

from occ.settings.config import Settings
from occ.telemetry import metrics
from tests.support import servers


def _build_info_line() -> str:
    version = importlib.metadata.version("occ")
    return f'occ_build_info{{python="{platform.python_version()}",version="{version}"}} 1.0'


def test_the_listener_binds_the_configured_address_only() -> None:
    settings = Settings(metrics_address="127.0.0.2", metrics_port=9)
    assert (settings.metrics_address, Settings().metrics_address) == (
        "127.0.0.2",
        "127.0.0.1",
    )
    port = servers.free_port()
    server = metrics.serve(port, address=settings.metrics_address)
    try:
        with urllib.request.urlopen(f"http://127.0.0.2:{port}/metrics", timeout=5) as response:
            assert response.status == 200
            assert _build_info_line() in response.read().decode().splitlines()
        with pytest.raises(urllib.error.URLError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5)
        assert isinstance(refused.value.reason, ConnectionRefusedError)
    finally:
        server.shutdown()
        server.server_close()
