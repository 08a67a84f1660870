"""A config directory the client cannot use: each command says which file and why in one line
(exit 2, no traceback), and ``OCC_URL`` with ``OCC_API_KEY`` need no readable profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.client.conftest import Operator, Ran

pytestmark = pytest.mark.timeout(300)


def _one_error_line(ran: Ran, expected: str) -> None:
    assert ran.exit_status == 2, ran
    assert ran.stderr.splitlines() == [expected], ran


def test_an_unwritable_profile_is_named_and_never_blamed_on_the_key(api_only: Operator) -> None:
    operator = api_only
    blocked = operator.home / "blocked"
    blocked.mkdir()
    (blocked / "occ").write_text("a file where the profile's directory should be")
    where = blocked / "occ" / "profile.json"
    env = {"XDG_CONFIG_HOME": str(blocked)}

    login = operator.run(
        "login", "--url", operator.api_url, "--key-file", str(operator.key_file), env=env
    )
    _one_error_line(
        login,
        f"occ: error: PROFILE_UNUSABLE: cannot write the profile {where}: {where.parent}: "
        "File exists",
    )
    unreadable = f"occ: error: PROFILE_UNUSABLE: cannot read the profile {where}: Not a directory"
    _one_error_line(operator.run("config", "set", "namespace", "team-a", env=env), unreadable)
    _one_error_line(operator.run("config", "unset", "namespace", env=env), unreadable)
    _one_error_line(operator.run("logout", env=env), unreadable)


def test_a_corrupt_profile_does_not_stop_the_environment_s_credentials(
    api_only: Operator,
) -> None:
    operator = api_only
    config = operator.home / "config" / "occ"
    config.mkdir(parents=True)
    where = config / "profile.json"
    where.write_text("{ not json")
    refused = operator.run("namespaces", "list")
    _one_error_line(
        refused, f"occ: error: PROFILE_UNUSABLE: cannot read the profile {where}: JSONDecodeError"
    )
    key = Path(operator.key_file).read_text().strip()
    env = {"OCC_URL": operator.api_url, "OCC_API_KEY": key}
    listed = operator.run("namespaces", "list", "-o", "json", env=env)
    assert listed.exit_status == 0, listed
    assert json.loads(listed.stdout) == []
