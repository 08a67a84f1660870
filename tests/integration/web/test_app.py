"""The API's start-up: drivers the startup configuration cannot provide stop it cleanly."""

from __future__ import annotations

import pytest

from occ.settings.config import Settings
from occ.web import app


def test_an_unavailable_hook_owner_stops_the_api_with_one_line(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        app.create_app(settings.replace(lifecycle_hook_owners="sandbox"))
    assert raised.value.code == app.EXIT_WORKER_BOOT_ERROR
    assert capsys.readouterr().err == (
        "occ-api: error: INVALID_REQUEST: /lifecycle_hook_owners: sandbox owns hooks but no "
        "sandbox driver is selected\n"
    )
