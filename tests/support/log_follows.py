"""Following a runtime's log in the driver log tests: a follow of new lines only, and its end
when closed early."""

from __future__ import annotations

import threading
import time

from occ.drivers.compute import base, runtime_logs
from tests.support import specs


def follow(
    reader: runtime_logs.LogReader, spec: base.RevisionSpec, follow_s: float
) -> runtime_logs.LogLines:
    """Follow the new lines (none already written) of the revision ``spec`` started, for up to
    ``follow_s`` seconds."""
    return reader.read_logs(
        specs.log_target(spec), runtime_logs.LogQuery(tail=0, follow=True, follow_s=follow_s)
    )


def assert_closed_early(lines: runtime_logs.LogLines, within_s: float) -> None:
    """Close the follow ``lines`` from another thread after 0.3 s: it must end, with no more
    lines, within ``within_s`` seconds."""
    started = time.monotonic()
    threading.Timer(0.3, lines.close).start()
    assert list(lines) == []
    assert time.monotonic() - started < within_s
