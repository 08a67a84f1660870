"""Lists and name lookups past one page: 250 items of each kind the client names.

The client reads a list page after page to its end (``--limit`` caps it) and finds an item by
name through the API's exact ``name`` filter, so the 250th Namespace, Configuration, Secret and
Agent are as reachable as the first.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from occ.state.db import Database
from tests.integration.client.conftest import Installed, Operator
from tests.support import rows

pytestmark = pytest.mark.timeout(300)

COUNT = 250


def _names(operator: Operator, *args: str) -> list[str]:
    listed = json.loads(operator.ok(*args, "-o", "json").stdout)
    return [item["name"] for item in listed]


def test_every_kind_lists_and_finds_its_250th_item(
    api_only: Operator, installed: Installed, db: Database
) -> None:
    operator = api_only
    with db.transaction() as session:
        namespace_ids = [
            rows.namespace(session, created_by=installed.admin_id, name=f"team-{index:03}")
            for index in range(COUNT)
        ]
        home = namespace_ids[-1]
        for index in range(COUNT):
            rows.configuration_and_secret(
                session,
                home,
                document={"n": index},
                configuration_name=f"config-{index:03}",
                secret_name=f"token-{index:03}",
            )
            rows.agent(session, namespace_id=home, name=f"agent-{index:03}")
    operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))

    last = f"{COUNT - 1:03}"
    assert _names(operator, "namespaces", "list") == [f"team-{i:03}" for i in range(COUNT)]
    assert len(_names(operator, "namespaces", "list", "--limit", "7")) == 7
    team = f"team-{last}"
    namespace = json.loads(operator.ok("namespaces", "get", team, "-o", "json").stdout)
    assert namespace["id"] == home

    # each Agent brings a Configuration of its own (rows.agent): 500 of them in all
    configurations = _names(operator, "configurations", "list", "-n", team)
    assert len(configurations) == 2 * COUNT and f"config-{last}" in configurations
    assert _names(operator, "secrets", "list", "-n", team) == [
        f"token-{i:03}" for i in range(COUNT)
    ]
    assert _names(operator, "agents", "list", "-n", team) == [f"agent-{i:03}" for i in range(COUNT)]
    assert len(_names(operator, "agents", "list", "-n", team, "--limit", "120")) == 120

    for kind, name in (
        ("configurations", f"config-{last}"),
        ("agents", f"agent-{last}"),
    ):
        found = json.loads(operator.ok(kind, "get", name, "-n", team, "-o", "json").stdout)
        assert found["name"] == name
    operator.ok("secrets", "delete", f"token-{last}", "-n", team)
    assert len(_names(operator, "secrets", "list", "-n", team)) == COUNT - 1
    missing = operator.run("agents", "get", "agent-999", "-n", team)
    assert missing.exit_status == 2
    assert "NOT_FOUND: no agent named 'agent-999'" in missing.stderr


def test_a_name_that_starts_like_an_id_is_found_by_name(
    api_only: Operator, installed: Installed, db: Database
) -> None:
    operator = api_only
    with db.transaction() as session:
        home = rows.namespace(session, created_by=installed.admin_id, name="ns_prod")
        configuration_id, _ = rows.configuration_and_secret(
            session, home, document={}, configuration_name="cfg_main", secret_name="sec_token"
        )
        agent_id = rows.agent(session, namespace_id=home, name="agt_helper")
    operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))

    def got(*args: str) -> Any:
        return json.loads(operator.ok(*args, "-o", "json").stdout)

    assert got("namespaces", "get", "ns_prod")["id"] == home
    assert got("namespaces", "get", home)["name"] == "ns_prod"  # the full id form is an id
    assert got("configurations", "get", "cfg_main", "-n", "ns_prod")["id"] == configuration_id
    assert got("agents", "get", "agt_helper", "-n", "ns_prod")["id"] == agent_id
    operator.ok("secrets", "delete", "sec_token", "-n", "ns_prod")
    assert _names(operator, "secrets", "list", "-n", "ns_prod") == []
    missing = operator.run("namespaces", "get", "ns_missing")
    assert "NOT_FOUND: no namespace named 'ns_missing'" in missing.stderr
