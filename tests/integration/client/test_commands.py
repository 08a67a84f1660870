"""The client end to end against a running occ (gunicorn API, worker fleet, beat).

The first session in five commands; ``--wait`` ending active (0), failed (1, a never-healthy
gateway past the convergence deadline) and timed out (3); a Namespace's deletion refused while
it holds contents, then followed with ``--wait`` until it is gone; ``-o json`` and ``-o yaml``
parse; ``auth can-i`` agrees with what the API then does; refused requests print
``occ: error: CODE: detail``; and neither the Secret's value nor any key is ever printed.
"""

from __future__ import annotations

import json
import re
import stat
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.client.conftest import Operator

pytestmark = pytest.mark.timeout(300)

SECRET_VALUE = "s3cr3t-value-never-printed-7f1c"


def _json(ran: Any) -> Any:
    return json.loads(ran.stdout)


def test_the_first_session_waits_and_reports_how_operations_end(operator: Operator) -> None:
    home = operator.home
    (home / "config.json").write_text(json.dumps({"model": "gpt-5"}))
    (home / "token.txt").write_text(SECRET_VALUE + "\n")

    # -- the first session: five commands ---------------------------------------------------
    login = operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))
    assert operator.api_url in login.stdout
    ready = operator.ok("namespaces", "create", "team-a", "--wait", "-o", "json")
    namespace = _json(ready)
    assert namespace["status"] == "ready"
    operator.ok("configurations", "create", "default", "-n", "team-a", "--file", "config.json")
    operator.ok("secrets", "create", "openclaw-token", "-n", "team-a", "--from-file", "token.txt")
    deployed = operator.ok(
        "agents", "create", "assistant", "-n", "team-a", "--configuration", "default",
        "--secret", "openclaw-token", "--deploy", "--wait", "-o", "json",
    )  # fmt: skip
    deployment = _json(deployed)
    assert deployment["state"] == "active", deployment
    assert "deployment rev_" in deployed.stderr  # progress, plain lines off a terminal

    profile_file = home / "config" / "occ" / "profile.json"
    assert stat.S_IMODE(profile_file.stat().st_mode) == 0o600
    stored = json.loads(profile_file.read_text())
    key = operator.key_file.read_text().strip()
    assert stored == {"url": operator.api_url, "key": key}

    agent = _json(operator.ok("agents", "get", "assistant", "-n", "team-a", "-o", "json"))
    assert agent["activeRevisionId"] == deployment["revisionId"]
    with urllib.request.urlopen(agent["endpoint"] + "/healthz", timeout=5) as response:
        assert json.loads(response.read())["agentId"] == agent["id"]

    # -- reads in every format ----------------------------------------------------------------
    listed = yaml.safe_load(operator.ok("agents", "list", "-n", "team-a", "-o", "yaml").stdout)
    assert [item["name"] for item in listed] == ["assistant"]
    table = operator.ok("namespaces", "list").stdout.splitlines()
    assert table[0].split() == ["ID", "NAME", "STATUS", "CREATEDAT"]
    assert any(line.split()[:3] == [namespace["id"], "team-a", "ready"] for line in table[1:])
    secrets = _json(operator.ok("secrets", "list", "-n", "team-a", "-o", "json"))
    assert [item["name"] for item in secrets] == ["openclaw-token"]
    work_id = f"agent_revision:{deployment['revisionId']}:reconcile"
    work = _json(operator.ok("work", "list", "--agent", agent["id"], "-o", "json"))
    assert work_id in {item["id"] for item in work}
    assert _json(operator.ok("work", "get", work_id, "-o", "json"))["state"] == "succeeded"
    events = _json(operator.ok("audit", "list", "--resource", agent["id"], "-o", "json"))
    assert "agents.deploy" in {event["action"] for event in events}

    # -- can-i agrees with the API -------------------------------------------------------------
    principal = agent["servicePrincipalId"]
    configuration_id = agent["configurationId"]
    secret_id = agent["harnessAuth"]["secretId"]
    can = operator.run(
        "auth", "can-i", "configuration:read", configuration_id, "-n", "team-a", "--as", principal
    )
    assert (can.exit_status, can.stdout.strip()) == (0, "yes")
    cannot = operator.run(
        "auth", "can-i", "configuration:update", configuration_id, "-n", "team-a",
        "--as", principal, "-o", "json",
    )  # fmt: skip
    assert cannot.exit_status == 1
    assert _json(cannot)["reason"] == "no_matching_binding"

    plain = _json(operator.ok(
        "agents", "create", "plain", "-n", "team-a", "--configuration", "default",
        "--secret", "openclaw-token", "--no-grant-runtime-access", "-o", "json",
    ))  # fmt: skip
    asked = operator.run(
        "auth", "can-i", "secret:operate", secret_id, "-n", "team-a",
        "--as", plain["servicePrincipalId"],
    )  # fmt: skip
    assert (asked.exit_status, asked.stdout.strip()) == (1, "no (no_matching_binding)")
    refused = operator.run("agents", "deploy", "plain", "-n", "team-a", "--wait")
    assert refused.exit_status == 2
    assert refused.stderr.startswith("occ: error: FORBIDDEN: "), refused.stderr
    assert plain["servicePrincipalId"] in refused.stderr
    assert "configuration:read" in refused.stderr
    mine = operator.run("auth", "can-i", "agent:deploy", plain["id"], "-n", "team-a")
    assert (mine.exit_status, mine.stdout.strip()) == (0, "yes")

    # -- timeout (3), then failure (1) of a never-healthy gateway -------------------------------
    (home / "sick.json").write_text(json.dumps({"standIn": {"healthy": False}}))
    operator.ok("configurations", "create", "sick", "-n", "team-a", "--file", "sick.json")
    slow = operator.run(
        "agents", "create", "sick", "-n", "team-a", "--configuration", "sick",
        "--secret", "openclaw-token", "--deploy", "--wait", "--timeout", "0.5",
    )  # fmt: skip
    assert slow.exit_status == 3, slow
    assert re.search(r"occ: error: TIMEOUT: deployment rev_\S+ is still pending", slow.stderr)
    named = re.search(r"deployment (rev_[0-9a-f-]+)", slow.stderr)
    assert named is not None, slow.stderr
    deployment_id = named.group(1)
    failed = operator.run(
        "deployments", "get", "sick", deployment_id, "-n", "team-a", "--wait", "-o", "json"
    )
    assert failed.exit_status == 1, failed
    assert _json(failed)["state"] == "failed"
    assert "occ: error: CONVERGENCE_DEADLINE_EXCEEDED: " in failed.stderr

    # -- stop and delete wait for the workers ---------------------------------------------------
    stopped = operator.run("agents", "stop", "assistant", "-n", "team-a", "--wait", "-o", "json")
    assert stopped.exit_status == 0, stopped
    assert _json(stopped)["activeRevisionId"] is None
    for name in ("assistant", "plain", "sick"):
        gone = operator.run("agents", "delete", name, "-n", "team-a", "--wait")
        assert gone.exit_status == 0, gone
    missing = operator.run("agents", "get", "assistant", "-n", "team-a")
    assert missing.exit_status == 2
    assert missing.stderr == (
        "occ: error: NOT_FOUND: no agent named 'assistant' that you may read "
        "(list them: occ agents list)\n"
    )

    # -- a bad key, a bad file: one line each ----------------------------------------------------
    bogus = "occ_key_00000000-0000-4000-8000-000000000000_" + "0" * 64
    rejected = operator.run("namespaces", "list", env={"OCC_API_KEY": bogus})
    assert rejected.exit_status == 2
    assert rejected.stderr.startswith("occ: error: UNAUTHENTICATED: ")
    assert bogus not in rejected.stdout + rejected.stderr
    empty = operator.run("secrets", "create", "empty", "-n", "team-a", "--stdin", stdin="")
    assert (empty.exit_status, empty.stderr) == (
        2,
        "occ: error: INVALID_FILE: the Secret's value is empty\n",
    )

    # -- a Namespace with contents is refused; emptied, its deletion waits for the workers -------
    refused_delete = operator.run("namespaces", "delete", "team-a", "--wait")
    assert refused_delete.exit_status == 2
    assert refused_delete.stderr.startswith("occ: error: NAMESPACE_NOT_EMPTY: "), refused_delete
    for collection, name in (
        ("configurations", "default"),
        ("configurations", "sick"),
        ("secrets", "openclaw-token"),
    ):
        operator.ok(collection, "delete", name, "-n", "team-a")
    removed = operator.run("namespaces", "delete", "team-a", "--wait")
    assert removed.exit_status == 0, removed
    after = operator.run("namespaces", "get", "team-a")
    assert after.exit_status == 2
    assert after.stderr.startswith("occ: error: NOT_FOUND: "), after.stderr

    # -- nothing printed a secret ----------------------------------------------------------------
    printed = operator.everything_printed()
    assert SECRET_VALUE not in printed
    assert key not in printed
    assert key.rsplit("_", 1)[1] not in printed


def test_login_refuses_a_key_the_api_does_not_know(operator: Operator, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.key"
    wrong.write_text("occ_key_00000000-0000-4000-8000-000000000000_" + "1" * 64)
    ran = operator.run("login", "--url", operator.api_url, "--key-file", str(wrong))
    assert ran.exit_status == 2
    assert ran.stderr.startswith("occ: error: UNAUTHENTICATED: ")
    assert not (operator.home / "config" / "occ" / "profile.json").exists()
    unset = operator.run("namespaces", "list")
    assert unset.exit_status == 2
    assert unset.stderr.startswith("occ: error: NOT_LOGGED_IN: not logged in")
    # the environment alone is a profile too
    key = operator.key_file.read_text().strip()
    listed = operator.run(
        "namespaces", "list", "-o", "json", env={"OCC_URL": operator.api_url, "OCC_API_KEY": key}
    )
    assert (listed.exit_status, _json(listed)) == (0, [])
