"""``--wait`` against an API that rate-limits the caller: a 429 is a reason to look again later
(after its ``Retry-After``), not the end of the command."""

from __future__ import annotations

import json

import pytest

from tests.integration.client.conftest import Operator

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def environment(environment: dict[str, str]) -> dict[str, str]:
    """The fleet's environment with a per-principal limit that a waiting client exceeds."""
    return {**environment, "OCC_RATE_LIMIT_PER_PRINCIPAL": "3/second"}


def test_a_wait_outlasts_the_rate_limit(operator: Operator) -> None:
    operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))
    waited = operator.run("namespaces", "create", "team-a", "--wait", "-o", "json")
    assert waited.exit_status == 0, waited
    assert json.loads(waited.stdout)["status"] == "ready"
    # two reads every 0.5 s: more than the limit, so some looks were refused and waited out
    assert "RATE_LIMITED" in waited.stderr, waited
