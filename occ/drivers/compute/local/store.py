"""The ``local`` driver's state on disk: where each file lives and how it is written.

Layout under the root::

    effects.jsonl                        the effect journal (``journal``), rotated by size
                                         into effects.jsonl.1 ... (``logfiles``)
    namespaces/<namespace id>/           one directory per Namespace (namespace.json)
    agents/<agent id>/active.json        {"revisionId", "endpoint"}: the Agent's endpoint
    agents/<agent id>/.lock              serialises this Agent's effects across processes
    agents/<agent id>/revisions/<rev>/   configuration.json (the snapshot), runtime.json
                                         (pid, port, startedAt, command, ...), gateway.log
                                         (rotated like the journal), credential (the
                                         delivered harness credential)

Every file written here is created 0600 and every directory 0700: the tree holds a
credential, and other users of the machine have no business reading the rest either.
Documents are replaced atomically (a temporary file renamed over the old one), so a reader
never sees half a document. This module knows nothing of processes or the contract's flow,
and never logs or quotes what a secret file holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from occ.drivers.compute import base, standin

FILE_MODE: Final = 0o600
"""Mode of every file the driver writes."""

DIRECTORY_MODE: Final = 0o700
"""Mode of every directory the driver creates."""

JOURNAL: Final = "effects.jsonl"
NAMESPACE: Final = "namespace.json"
ACTIVE: Final = "active.json"
LOCK: Final = ".lock"
SNAPSHOT: Final = "configuration.json"
RUNTIME: Final = "runtime.json"
LOG: Final = "gateway.log"
CREDENTIAL: Final = "credential"

_SAFE_ID_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
)


@dataclass(frozen=True)
class Layout:
    """The paths of everything under one root (ids are checked to be one path component)."""

    root: Path

    @property
    def journal(self) -> Path:
        return self.root / JOURNAL

    @property
    def namespaces(self) -> Path:
        return self.root / "namespaces"

    @property
    def agents(self) -> Path:
        return self.root / "agents"

    def namespace_dir(self, namespace_id: str) -> Path:
        return self.namespaces / checked_id(namespace_id)

    def agent_dir(self, agent_id: str) -> Path:
        return self.agents / checked_id(agent_id)

    def revisions_dir(self, agent_id: str) -> Path:
        return self.agent_dir(agent_id) / "revisions"

    def revision_dir(self, agent_id: str, revision_id: str) -> Path:
        return self.revisions_dir(agent_id) / checked_id(revision_id)

    def active_pointer(self, agent_id: str) -> Path:
        return self.agent_dir(agent_id) / ACTIVE


def checked_id(value: str) -> str:
    """``value`` when it is safe as one path component; else ``INVALID_IDENTIFIER``."""
    if not value or value.startswith("-") or not set(value) <= _SAFE_ID_CHARACTERS:
        raise base.PermanentDriverError("INVALID_IDENTIFIER", "not a usable id")
    return value


# -- directories ---------------------------------------------------------------------------


def make_directories(path: Path) -> None:
    """Create ``path`` and its missing parents, each 0700 (existing ones are left alone)."""
    missing = []
    current = path
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            directory.mkdir(mode=DIRECTORY_MODE)
            os.chmod(directory, DIRECTORY_MODE)  # the umask could have narrowed it oddly


def remove_tree(path: Path) -> None:
    """Remove ``path`` and everything below it; gone already is fine."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise base.TransientDriverError("LOCAL_STATE_UNREMOVABLE", type(exc).__name__) from None


# -- files ---------------------------------------------------------------------------------


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` atomically with ``text`` (a 0600 file; its directory must exist)."""
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, FILE_MODE)  # mkstemp's mode already, said out loud
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def write_if_changed(path: Path, text: str) -> None:
    """``write_text`` unless ``path`` holds ``text`` already (an unchanged file stays put)."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (FileNotFoundError, ValueError):
        pass
    write_text(path, text)


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    write_text(path, json.dumps(document, indent=2))


def write_snapshot(path: Path, document: Mapping[str, Any]) -> None:
    """Write the configuration snapshot (unchanged content is not rewritten)."""
    write_if_changed(path, standin.configuration_text(document))


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; ``None`` when it is missing or not an object."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    return document if isinstance(document, dict) else None


# -- locks ---------------------------------------------------------------------------------


@contextlib.contextmanager
def agent_lock(
    operation: base.Operation, agent_dir: Path, *, create: bool = True
) -> Iterator[None]:
    """Hold the Agent's lock file (workers in other processes wait; abort ends the wait).

    With ``create=False`` an Agent without a directory is not locked (nor recreated):
    teardown after ``delete_agent_credentials`` finds nothing to protect.
    """
    if create:
        make_directories(agent_dir)
    try:
        descriptor = os.open(agent_dir / LOCK, os.O_RDWR | os.O_CREAT, FILE_MODE)
    except FileNotFoundError:
        if create:
            raise
        yield
        return
    try:
        os.fchmod(descriptor, FILE_MODE)
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                operation.wait(0.02)
        yield
    finally:
        os.close(descriptor)
