"""prometheus_client's multiprocess files, written and read by tests as a process would.

``prometheus_client.mmap_dict`` is unannotated (only ``mmap_key`` has types); its calls are made
here once, so the tests that plant or read a file are checked against these signatures.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from prometheus_client.mmap_dict import MmapedDict, mmap_key


def plant(
    path: Path,
    metric: str,
    value: float,
    *,
    help_text: str,
    labels: Mapping[str, str] | None = None,
) -> None:
    """A file holding one sample, as a process of an earlier run would have left it."""
    given = dict(labels or {})
    stale = MmapedDict(str(path))  # type: ignore[no-untyped-call]  # unannotated library
    key = mmap_key(metric, metric, list(given), list(given.values()), help_text)
    stale.write_value(key, value, 0.0)  # type: ignore[no-untyped-call]  # unannotated library
    stale.close()  # type: ignore[no-untyped-call]  # unannotated library


def samples(path: Path) -> list[tuple[str, float]]:
    """Each sample's key (JSON: metric, name, labels, help) and value in the file at ``path``."""
    found = MmapedDict.read_all_values_from_file(str(path))  # type: ignore[no-untyped-call]  # unannotated
    return [(str(key), float(value)) for key, value, _, _ in found]
