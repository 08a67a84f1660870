"""``occ dev``'s ready line: the API, the key file, the console, the broker occ dev runs (for
Flower), and Flower's URL and credential file when it runs Flower."""

from __future__ import annotations

import json

import pytest

from occ.dev import terminal

API = "http://127.0.0.1:8000"
KEY = "/home/a/.occ/admin.key"
LINK = "/home/a/.occ/sign-in.url"


def test_the_ready_line_names_the_broker_occ_dev_runs(capsys: pytest.CaptureFixture[str]) -> None:
    terminal.announce_ready(API, KEY, LINK, "redis://127.0.0.1:6399/0")
    line = json.loads(capsys.readouterr().out)
    assert line["brokerUrl"] == "redis://127.0.0.1:6399/0"
    assert (line["event"], line["apiUrl"], line["adminKeyFile"]) == ("dev.ready", API, KEY)


def test_a_broker_from_the_environment_is_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    terminal.announce_ready(API, KEY, LINK, None)
    assert "brokerUrl" not in json.loads(capsys.readouterr().out)


def test_with_flower_the_line_names_its_url_and_credential_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    terminal.announce_ready(
        API, KEY, LINK, None, ("http://127.0.0.1:5555", "/home/a/.occ/flower.auth")
    )
    line = json.loads(capsys.readouterr().out)
    assert line["flowerUrl"] == "http://127.0.0.1:5555"
    assert line["flowerAuthFile"] == "/home/a/.occ/flower.auth"
    terminal.announce_ready(API, KEY, LINK, None)
    assert "flowerUrl" not in json.loads(capsys.readouterr().out)
