"""``occ work list`` and ``occ audit list`` page by page against the API.

Whatever ``-o`` is, a page with more after it ends with the command that reads the next one on
stderr, repeating the filters and ``--limit`` (the work list's cursor is bound to its filters),
and that command reads on; ``--all`` reads every page.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import pytest
import yaml

from tests.integration.client.conftest import Operator, Ran

pytestmark = pytest.mark.timeout(300)


def _json(ran: Ran) -> Any:
    return json.loads(ran.stdout)


def _next_command(ran: Ran) -> list[str]:
    """The arguments of the ``next: occ ...`` line on stderr (after ``occ``)."""
    hints = [line for line in ran.stderr.splitlines() if line.startswith("next: occ ")]
    assert len(hints) == 1, ran
    return shlex.split(hints[0].removeprefix("next: occ "))


def _queued_namespaces(operator: Operator, count: int) -> list[str]:
    """``count`` Namespaces whose ready work stays queued (no worker runs); their ids."""
    operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))
    return [
        _json(operator.ok("namespaces", "create", f"team {index}", "-o", "json"))["id"]
        for index in range(count)
    ]


def test_every_page_of_work_is_reachable_in_every_format(api_only: Operator) -> None:
    operator = api_only
    created = _queued_namespaces(operator, 3)
    expected = {f"namespace:{namespace_id}:reconcile:ready" for namespace_id in created}

    first = operator.ok("work", "list", "--state", "queued", "--limit", "2", "-o", "json")
    assert len(_json(first)) == 2
    following = _next_command(first)
    assert following[:6] == ["work", "list", "--state", "queued", "--limit", "2"]
    assert following[6] == "--cursor"
    second = operator.ok(*following, "-o", "json")  # the cursor is accepted: same filters
    assert {item["id"] for item in _json(first) + _json(second)} == expected
    assert "next:" not in second.stderr  # the last page

    table = operator.ok("work", "list", "--state", "queued", "--limit", "2")
    assert _next_command(table) == following
    named = operator.ok("work", "list", "--state", "queued", "--limit", "2", "-o", "name")
    assert _next_command(named) == following
    assert named.stdout.splitlines() == [f"work/{item['id']}" for item in _json(first)]
    audit = operator.ok("audit", "list", "--kind", "mutation", "--limit", "1", "-o", "name")
    assert re.fullmatch(r"auditevent/aud_[0-9a-f-]{36}\n", audit.stdout), audit

    every = operator.ok("work", "list", "--state", "queued", "--limit", "2", "--all", "-o", "json")
    assert {item["id"] for item in _json(every)} == expected
    assert "next:" not in every.stderr


def test_every_page_of_audit_events_is_reachable(api_only: Operator) -> None:
    operator = api_only
    _queued_namespaces(operator, 3)
    whole = _json(operator.ok("audit", "list", "--kind", "mutation", "-o", "json"))
    assert len(whole) >= 3

    first = operator.ok("audit", "list", "--kind", "mutation", "--limit", "2", "-o", "yaml")
    following = _next_command(first)
    assert following[:6] == ["audit", "list", "--kind", "mutation", "--limit", "2"]
    assert following[6] == "--before"
    rest = _json(operator.ok(*following, "--all", "-o", "json"))
    pages = [event["sequence"] for event in (*yaml.safe_load(first.stdout), *rest)]
    assert pages == [event["sequence"] for event in whole]

    every = operator.ok(
        "audit", "list", "--kind", "mutation", "--limit", "2", "--all", "-o", "json"
    )
    assert _json(every) == whole
