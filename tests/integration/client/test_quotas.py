"""``occ namespaces quotas get`` and ``set`` against a running API: an administrator sets and
resets a Namespace's limits; a value that is not a number is refused before any request."""

from __future__ import annotations

import json

from tests.integration.client.conftest import Operator


def test_an_administrator_sets_reads_and_resets_quotas(api_only: Operator) -> None:
    operator = api_only
    operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))
    operator.ok("namespaces", "create", "team-q")
    set_to = json.loads(
        operator.ok(
            "namespaces",
            "quotas",
            "set",
            "team-q",
            "--agents",
            "3",
            "--secrets",
            "0",
            "-o",
            "json",
        ).stdout
    )
    assert set_to["agents"] == {"limit": 3, "used": 0, "overridden": True}
    assert set_to["secrets"] == {"limit": 0, "used": 0, "overridden": True}
    table = operator.ok("namespaces", "quotas", "get", "team-q").stdout
    [agents_row] = [line.split() for line in table.splitlines() if line.startswith("agents")]
    assert agents_row == ["agents", "3", "0", "true"]
    operator.ok("namespaces", "quotas", "set", "team-q", "--agents", "default")
    read = json.loads(operator.ok("namespaces", "quotas", "get", "team-q", "-o", "json").stdout)
    assert read["agents"]["overridden"] is False and read["secrets"]["limit"] == 0
    refused = operator.run("namespaces", "quotas", "set", "team-q", "--agents", "many")
    assert refused.exit_status == 2 and "'default'" in refused.stderr
    nothing = operator.run("namespaces", "quotas", "set", "team-q")
    assert nothing.exit_status == 2
