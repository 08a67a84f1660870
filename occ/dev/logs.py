"""Log files of ``occ dev``: appended across starts and restarts, rotated by size.

Every file under ``<home>/logs`` (``dev.log`` and one per child) is opened for appending and
rotated once it reaches ``Limits.max_bytes`` (``OCC_LOG_FILE_MAX_BYTES``): ``name.log`` becomes
``name.log.1``, which becomes ``name.log.2``; at most ``Limits.files`` files per name are kept
(``OCC_LOG_FILE_BACKUPS`` rotated ones beside the current one). Every file is created 0600 (an
older one is narrowed to it): a child's output may name what only its owner should read.
``dev.log`` holds occ dev's own records in occ's log format (one JSON object per line,
``observability.JsonFormatter``), its events and its supervisor's messages alike. Nothing here
decides what is logged. Opening, naming and shifting the files is the local driver's
``logfiles``, whose gateway logs rotate the same way.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from occ.drivers.compute.local import logfiles
from occ.settings.config import Settings
from occ.telemetry import observability

MAX_BYTES: Final = 10 * 1024 * 1024
FILES: Final = 3
"""The current file and two rotated ones."""
SERVICE: Final = "occ-dev"
"""The service ``dev.log``'s lines name."""

_CHUNK: Final = 64 * 1024


@dataclass(frozen=True)
class Limits:
    """How large a log file grows before it is rotated, and how many files a name keeps."""

    max_bytes: int = MAX_BYTES
    files: int = FILES

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        """The limits the settings give every log file occ writes."""
        return cls(max_bytes=settings.log_file_max_bytes, files=settings.log_file_backups + 1)


DEFAULT_LIMITS: Final = Limits()


def rotate(path: Path, files: int = FILES) -> None:
    """Shift ``path`` to ``path.1`` (and so on), dropping the oldest beyond ``files``."""
    logfiles.shift(path, files - 1)
    if files <= 1:
        path.unlink(missing_ok=True)


class RotatingLog:
    """One log file that threads may append bytes to; it rotates before it passes the limit."""

    @classmethod
    def limited(cls, path: Path, limits: Limits) -> RotatingLog:
        return cls(path, max_bytes=limits.max_bytes, files=limits.files)

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES, files: int = FILES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.files = files
        self._lock = threading.Lock()
        self._handle: IO[bytes] | None = None

    def write(self, data: bytes) -> None:
        with self._lock:
            handle = self._open()
            if handle.tell() and handle.tell() + len(data) > self.max_bytes:
                handle.close()
                rotate(self.path, self.files)
                handle = self._handle = os.fdopen(logfiles.open_appending(self.path), "ab")
            handle.write(data)
            handle.flush()

    def copy_from(self, stream: IO[bytes], *, name: str) -> threading.Thread:
        """Copy ``stream`` into this log on a daemon thread until end of file, then close it."""
        thread = threading.Thread(target=self._copy, args=(stream,), name=name, daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def _open(self) -> IO[bytes]:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = os.fdopen(logfiles.open_appending(self.path), "ab")
        return self._handle

    def _copy(self, stream: IO[bytes]) -> None:
        try:
            descriptor = stream.fileno()
            while chunk := os.read(descriptor, _CHUNK):
                self.write(chunk)
        except (OSError, ValueError):
            return  # the pipe or the file is gone: nothing left to copy
        finally:
            stream.close()


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """The standard rotating handler, its files created ``logfiles.FILE_MODE``."""

    def _open(self) -> IO[str]:  # type: ignore[override]  # typeshed's TextIOWrapper
        return os.fdopen(
            logfiles.open_appending(Path(self.baseFilename)), "a", encoding=self.encoding
        )


def file_handler(path: Path, limits: Limits = DEFAULT_LIMITS) -> logging.Handler:
    """A handler appending to ``path`` (``dev.log``) with the same rotation as the children."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _PrivateRotatingFileHandler(
        path, mode="a", maxBytes=limits.max_bytes, backupCount=limits.files - 1, encoding="utf-8"
    )
    handler.setFormatter(observability.JsonFormatter(SERVICE))
    return handler
