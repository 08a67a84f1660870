"""The kubectl and heroku habits, end to end against a running occ.

Completion scripts that complete; a default Namespace in the profile, so no ``-n``; ``-o
name`` and ``-o wide``; ``--watch`` printing the change a deploy makes; ``agents update``
with ``--deploy``; a deploy refused for the service principal naming the grant, and
``agents grant-runtime-access`` letting it through; ``agents delete --wait`` without ``-n``;
the next-step hints on stderr.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from tests.integration.client.conftest import Operator

pytestmark = pytest.mark.timeout(300)


def _json(ran: Any) -> Any:
    return json.loads(ran.stdout)


class _Watcher:
    """``occ ... --watch`` in the background; its stdout lines as they come."""

    def __init__(self, operator: Operator, *args: str) -> None:
        self.lines: list[str] = []
        self.process = operator.start(*args)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, found: Any, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if found(line):
                    return line
            assert self.process.poll() is None, (self.process.returncode, self.lines)
            time.sleep(0.05)
        raise AssertionError(f"no such line within {timeout} s: {self.lines}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self._reader.join(timeout=10)


def test_completion_scripts_complete_occ(operator: Operator) -> None:
    for shell in ("bash", "zsh", "fish"):
        script = operator.ok("completion", shell).stdout
        assert "_OCC_COMPLETE" in script, shell
    completed = operator.run(
        env={"_OCC_COMPLETE": "bash_complete", "COMP_WORDS": "occ agents gr", "COMP_CWORD": "2"}
    )
    assert completed.exit_status == 0, completed
    assert "grant-runtime-access" in completed.stdout
    assert operator.run("completion", "tcsh").exit_status == 2


def _is_active(line: str) -> bool:
    item = json.loads(line)
    return isinstance(item, dict) and item.get("activeRevisionId") is not None


def test_a_session_without_n_watching_updating_and_granting(operator: Operator) -> None:
    home = operator.home
    (home / "config.json").write_text(json.dumps({"model": "gpt-5"}))
    (home / "second.json").write_text(json.dumps({"model": "gpt-5-mini"}))
    (home / "token.txt").write_text("token-value-never-printed\n")
    operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))
    created = operator.ok("namespaces", "create", "team-a", "--wait")
    assert "next: occ config set namespace team-a" in created.stderr

    # -- a default Namespace ---------------------------------------------------------------
    no_default = operator.run("agents", "list")
    assert no_default.exit_status == 2
    assert "occ config set namespace" in no_default.stderr
    operator.ok("config", "set", "namespace", "team-a")
    view = _json(operator.ok("config", "view", "-o", "json"))
    assert view["namespace"] == "team-a" and view["url"] == operator.api_url
    assert "key" not in view
    operator.ok("configurations", "create", "default", "--file", "config.json")
    operator.ok("configurations", "create", "second", "--file", "second.json")
    operator.ok("secrets", "create", "token", "--from-file", "token.txt")
    draft = operator.ok(
        "agents", "create", "helper", "--configuration", "default", "--secret", "token",
        "--no-grant-runtime-access",
    )  # fmt: skip
    assert "next: occ agents deploy helper" in draft.stderr

    # -- the refused deploy names the grant, which lets it through -----------------------------
    refused = operator.run("agents", "deploy", "helper", "--wait")
    assert refused.exit_status == 2, refused
    assert "next: occ agents grant-runtime-access agt_" in refused.stderr
    granted = _json(operator.ok("agents", "grant-runtime-access", "helper", "-o", "json"))
    assert len(granted["bindingIds"]) == 2
    assert (
        _json(operator.ok("agents", "grant-runtime-access", "helper", "-o", "json"))["bindingIds"]
        == []
    )

    # -- --watch prints the change the deploy makes --------------------------------------------
    watcher = _Watcher(operator, "agents", "list", "-w", "--interval", "0.3", "-o", "json")
    try:
        watcher.wait_for(lambda line: line.startswith("["))
        deployed = _json(operator.ok("agents", "deploy", "helper", "--wait", "-o", "json"))
        assert deployed["state"] == "active"
        changed = watcher.wait_for(lambda line: line.startswith("{") and _is_active(line))
        assert json.loads(changed)["activeRevisionId"] == deployed["revisionId"]
    finally:
        watcher.stop()

    # -- -o name and -o wide ---------------------------------------------------------------------
    assert operator.ok("agents", "list", "-o", "name").stdout.split() == ["agent/helper"]
    assert operator.ok("configurations", "list", "-o", "name").stdout.split() == [
        "configuration/default",
        "configuration/second",
    ]
    wide = operator.ok("agents", "list", "-o", "wide").stdout.splitlines()
    assert {"EXECUTIONMODE", "COMPUTEDRIVER", "RUNTIMESTATUS"} <= set(wide[0].split())
    assert wide[1].split()[1] == "helper"

    # -- update with --deploy -------------------------------------------------------------------
    second = _json(operator.ok("configurations", "get", "second", "-o", "json"))
    update = ("agents", "update", "helper", "--configuration", "second", "--deploy", "--wait")
    updated = _json(operator.ok(*update, "-o", "json"))
    assert updated["state"] == "active"
    agent = _json(operator.ok("agents", "get", "helper", "-o", "json"))
    assert agent["configurationId"] == second["id"]
    assert agent["activeRevisionId"] == updated["revisionId"]
    nothing = operator.run("agents", "update", "helper")
    assert nothing.exit_status == 2 and "give what changes" in nothing.stderr

    # -- delete --wait without -n ------------------------------------------------------------------
    operator.ok("agents", "delete", "helper", "--wait")
    assert operator.ok("agents", "list", "-o", "name").stdout.strip() == ""
    assert "token-value-never-printed" not in operator.everything_printed()
