"""The ``ssh`` driver reads no runtime logs: every read is ``LOGS_UNSUPPORTED``."""

from __future__ import annotations

import pytest

from occ.drivers.compute import base, runtime_logs
from occ.drivers.compute.ssh import logs as ssh_logs
from occ.settings.config import Settings


def test_every_read_is_refused_as_unsupported() -> None:
    reader = ssh_logs.SshLogs.from_settings(Settings())
    target = runtime_logs.LogTarget("ns_1", "agt_1", "rev_1", "embedded")
    with pytest.raises(base.PermanentDriverError) as raised:
        reader.read_logs(target, runtime_logs.LogQuery())
    assert raised.value.code == runtime_logs.UNSUPPORTED
