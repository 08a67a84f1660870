"""Ctrl-C during ``--wait`` stops the wait, not the operation: exit 130 and the last state."""

from __future__ import annotations

import select
import signal
import time

import pytest

from tests.integration.client.conftest import Operator

pytestmark = pytest.mark.timeout(300)


def test_ctrl_c_during_a_wait_exits_130_with_the_last_state(api_only: Operator) -> None:
    operator = api_only  # no worker: the Namespace stays provisioning
    operator.ok("login", "--url", operator.api_url, "--key-file", str(operator.key_file))
    waiter = operator.start("namespaces", "create", "team-a", "--wait")
    try:
        assert waiter.stderr is not None
        deadline = time.monotonic() + 30
        seen = ""
        while ": provisioning" not in seen and time.monotonic() < deadline:
            if select.select([waiter.stderr], [], [], 1.0)[0]:
                seen += waiter.stderr.readline()
        assert ": provisioning" in seen, seen
        waiter.send_signal(signal.SIGINT)
        assert waiter.wait(timeout=20) == 130
        rest = waiter.stderr.read()
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.wait()
    assert "occ: error: INTERRUPTED: namespace ns_" in rest, rest
    assert "is still provisioning" in rest and "Traceback" not in rest, rest
