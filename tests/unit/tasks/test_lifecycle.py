"""Start-up warnings of a Celery process: one ``settings.warning`` line per doubtful setting."""

from __future__ import annotations

import json

import pytest

from occ.settings.config import Settings
from occ.tasks import lifecycle


def test_a_production_url_without_a_password_is_warned_about_once_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = "redis://redis.example:6379/0"
    settings = Settings(
        environment="production",
        broker_url=url,
        database_url="postgresql+psycopg://occ_app:pw@db.example/occ",
        api_key_pepper="p" * 32,
        secret_key="k" * 32,
        compute_driver="kubernetes",
    )
    lifecycle.warn_about(settings)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(line["event"], line["level"]) for line in lines] == [("settings.warning", "warning")]
    assert lines[0]["reason"].startswith("/broker_url: has no password")
    assert url not in json.dumps(lines)
