"""``occ agents logs`` end to end against a running occ (gunicorn API, workers, the ``local``
driver's real gateway): tail, redaction of the harness credential, ``-f`` until Ctrl-C."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.client.conftest import Operator

pytestmark = pytest.mark.timeout(300)

SECRET_VALUE = "s3cr3t-value-of-the-logs-test-91ad"


def _deployed(operator: Operator) -> dict[str, str]:
    home = operator.home
    (home / "config.json").write_text(json.dumps({"model": "gpt-5"}))
    (home / "token.txt").write_text(SECRET_VALUE + "\n")
    operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))
    operator.ok("namespaces", "create", "team-a", "--wait")
    operator.ok("configurations", "create", "default", "-n", "team-a", "--file", "config.json")
    operator.ok("secrets", "create", "openclaw-token", "-n", "team-a", "--from-file", "token.txt")
    operator.ok(
        "agents", "create", "assistant", "-n", "team-a", "--configuration", "default",
        "--secret", "openclaw-token", "--deploy", "--wait",
    )  # fmt: skip
    agent: dict[str, str] = json.loads(
        operator.ok("agents", "get", "assistant", "-n", "team-a", "-o", "json").stdout
    )
    return agent


def _log(operator: Operator, agent: dict[str, str]) -> Path:
    local = operator.home.parent / "local"
    return local / "agents" / agent["id"] / "revisions" / agent["activeRevisionId"] / "gateway.log"


def test_logs_tail_redacts_and_follows_until_interrupted(operator: Operator) -> None:
    agent = _deployed(operator)
    printed = operator.ok("agents", "logs", "assistant", "-n", "team-a")
    assert [json.loads(line)["event"] for line in printed.stdout.splitlines()] == [
        "gateway.started"
    ]
    with _log(operator, agent).open("a", encoding="utf-8") as log:
        log.write(f"harness says token={SECRET_VALUE}\n")
    last = operator.ok("agents", "logs", "assistant", "-n", "team-a", "--tail", "1")
    assert last.stdout == "harness says token=[REDACTED]\n"
    since = operator.ok("agents", "logs", agent["id"], "-n", "team-a", "--since", "1h")
    assert since.stdout.startswith('{"event":"gateway.started"')

    follower = subprocess.Popen(
        [sys.executable, "-c", "from occ.cli import main; main()", "agents", "logs",
         "assistant", "-n", "team-a", "-f", "--tail", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=operator.environment(),
        cwd=operator.home,
    )  # fmt: skip
    try:
        assert follower.stdout is not None
        deadline = time.monotonic() + 30
        line = ""
        while not line and time.monotonic() < deadline:  # until the follow is attached
            with _log(operator, agent).open("a", encoding="utf-8") as log:
                log.write(f"later {SECRET_VALUE}\n")
            if select.select([follower.stdout], [], [], 1.0)[0]:
                line = follower.stdout.readline()
        assert line == "later [REDACTED]\n"
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=20) == 130
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    assert follower.stderr is not None
    assert SECRET_VALUE not in follower.stderr.read() + operator.everything_printed()

    refused = operator.run("agents", "logs", "nobody", "-n", "team-a")
    assert refused.exit_status != 0
    assert "NOT_FOUND" in refused.stderr
