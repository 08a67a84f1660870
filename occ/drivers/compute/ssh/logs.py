"""The ``ssh`` driver's runtime logs: not read yet (``LOGS_UNSUPPORTED``).

A host's gateway logs go to the host's journal through its systemd unit; reading them needs
a read-only command in the host helper, which this version does not have.
"""

from __future__ import annotations

from occ.drivers.compute import runtime_logs
from occ.settings.config import Settings


class SshLogs:
    """Refuses every read with ``LOGS_UNSUPPORTED``."""

    @classmethod
    def from_settings(cls, settings: Settings) -> SshLogs:
        return cls()

    def read_logs(
        self, target: runtime_logs.LogTarget, query: runtime_logs.LogQuery
    ) -> runtime_logs.LogLines:
        raise runtime_logs.unsupported("ssh")
