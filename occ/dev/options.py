"""What ``occ dev`` was asked for on its command line (a value; nothing here acts on it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DevOptions:
    """``--home``, ``--port`` (0: any free port), ``--compute`` (None: the environment's or
    ``local``), ``--ready-timeout`` in seconds and Flower's port (None: no Flower)."""

    home: Path
    port: int = 8000
    compute: str | None = None
    ready_timeout: float = 120.0
    flower_port: int | None = None
