"""``occ dev --flower``'s pieces: the credential (0600, generated once, then reused), the child's
command line (loopback, read-only, no password) and a taken port refused before anything starts."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import pytest

from occ.dev import children, errors, flower, home


def test_the_credential_is_generated_once_privately_and_reused(tmp_path: Path) -> None:
    layout = home.Home.at(tmp_path / "home")
    layout.create()
    first = flower.credential(layout)
    user, _, password = first.partition(":")
    assert user == "occ" and len(password) >= 16
    assert stat.S_IMODE(layout.flower_auth.stat().st_mode) == 0o600
    assert flower.credential(layout) == first
    layout.flower_auth.write_text("no-colon\n")
    with pytest.raises(errors.DevError, match="delete it"):
        flower.credential(layout)


def test_flower_runs_on_loopback_with_its_password_in_the_environment_only(
    tmp_path: Path,
) -> None:
    spec = flower.spec(
        env={"OCC_BROKER_URL": "redis://127.0.0.1:1/0"},
        cwd=tmp_path,
        port=5599,
        basic_auth="occ:s3cret-password",
    )
    assert spec.name == flower.NAME
    assert spec.argv[1:6] == ("-m", "celery", "-A", "occ.tasks.app", "flower")
    assert "--address=127.0.0.1" in spec.argv and "--port=5599" in spec.argv
    assert "--read-only" in spec.argv
    assert not any("s3cret" in argument for argument in spec.argv)
    assert spec.env["FLOWER_BASIC_AUTH"] == "occ:s3cret-password"
    assert spec.env["OCC_BROKER_URL"] == "redis://127.0.0.1:1/0"


def test_a_taken_port_is_refused(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(errors.DevError, match=f"127.0.0.1:{port}"):
            flower.check_port(port)
    flower.check_port(port)  # free again


def test_flower_stops_in_the_first_stage() -> None:
    first, second = children.stop_stages(lambda: None, beside=(flower.NAME,))
    assert flower.NAME in first.terminate and flower.NAME not in second.terminate
    assert flower.NAME not in children.stop_stages(lambda: None)[0].terminate
