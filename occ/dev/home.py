"""The home directory of ``occ dev``: its layout, its lock, its generated secrets.

Layout: ``pg/`` (database), ``redis/``, ``broker/`` (filesystem fallback), ``local/`` (local
Compute Driver), ``logs/`` (``dev.log`` and one file per child, rotated), ``run/`` (``dev.lock``,
``dev.pids``, worker readiness markers ``<name>.ready``), ``metrics/<name>/`` (each child's
Prometheus multiprocess directory, emptied at every start), ``secrets.env`` (generated pepper,
secret key and sign-in secret, 0600), ``admin.key`` (0600), ``sign-in.url`` (the
administrator's one-time console sign-in link, 0600), ``flower.auth`` (``--flower``'s
credential, 0600), ``beat-schedule``. Nothing here starts a process.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, overload

from occ.dev import errors

DIRECTORY_MODE: Final = 0o700
"""Mode of the home's directories."""
SECRET_NAMES: Final = ("OCC_API_KEY_PEPPER", "OCC_SECRET_KEY")


class _Below:
    """A read-only path of the home: ``name`` below its root."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, home: None, owner: type[Home]) -> _Below: ...
    @overload
    def __get__(self, home: Home, owner: type[Home]) -> Path: ...
    def __get__(self, home: Home | None, owner: type[Home]) -> Path | _Below:
        return self if home is None else home.root / self.name


@dataclass(frozen=True)
class Home:
    """Paths under one home directory (absolute)."""

    root: Path
    logs = _Below("logs")
    run = _Below("run")
    key_file = _Below("admin.key")
    sign_in_link = _Below("sign-in.url")
    flower_auth = _Below("flower.auth")
    secrets_file = _Below("secrets.env")
    metrics = _Below("metrics")

    @classmethod
    def at(cls, path: Path) -> Home:
        return cls(path.expanduser().resolve())

    @property
    def pids_file(self) -> Path:
        return self.run / "dev.pids"

    def metrics_dir(self, name: str) -> Path:
        """The Prometheus multiprocess directory of the child called ``name``."""
        return self.metrics / name

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def marker(self, name: str) -> Path:
        """The readiness marker a worker called ``name`` writes once its checks passed."""
        return self.run / f"{name}.ready"

    def create(self) -> None:
        """The home's directories, 0700 (an older one is narrowed to it): its logs, keys and
        runtime files are its owner's alone."""
        for directory in (self.root, self.logs, self.run):
            directory.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
            os.chmod(directory, DIRECTORY_MODE)


def lock(home: Home) -> IO[str]:
    """Hold ``run/dev.lock`` while the returned file is open: one occ dev per home."""
    handle = (home.run / "dev.lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise errors.DevError(f"another occ dev is running with home {home.root}") from None
    return handle


def empty_metrics(home: Home) -> None:
    """A fresh, empty ``metrics/``: nothing a previous run counted is served again."""
    shutil.rmtree(home.metrics, ignore_errors=True)
    home.metrics.mkdir(parents=True)


def generated_secrets(home: Home) -> dict[str, str]:
    """The generated pepper and secret key, created once in ``secrets.env`` (0600)."""
    path = home.secrets_file
    if not path.exists():
        text = "".join(f"{name}={secrets.token_hex(32)}\n" for name in SECRET_NAMES)
        write_private(path, text)
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name in SECRET_NAMES and value:
            values[name] = value
    missing = [name for name in SECRET_NAMES if name not in values]
    if missing:
        raise errors.DevError(f"{path} lacks {', '.join(missing)}; delete it to generate new ones")
    return values


def auth_secret(home: Home) -> str:
    """The generated ``OCC_AUTH_SECRET`` (sessions, CSRF, the one-time sign-in link), added to
    ``secrets.env`` once (a home made before sign-in existed gets it then)."""
    path = home.secrets_file
    for line in path.read_text(encoding="utf-8").splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name == "OCC_AUTH_SECRET" and value:
            return value
    value = secrets.token_hex(32)
    text = path.read_text(encoding="utf-8")
    write_private(
        path,
        text + ("" if text.endswith("\n") else "\n") + f"OCC_AUTH_SECRET={value}\n",
        replace=True,
    )
    return value


def write_pids(home: Home, pids: Mapping[str, int]) -> None:
    """``run/dev.pids``: the process ids of occ dev, its services and children, as JSON."""
    write_private(home.pids_file, json.dumps(dict(pids), indent=2) + "\n", replace=True)


def write_private(path: Path, text: str, *, replace: bool = False) -> None:
    """Write ``text`` to ``path``, readable by the owner only (0600), atomically.

    Without ``replace`` an existing ``path`` is left alone (``FileExistsError``).
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    if replace:
        os.replace(temporary, path)
        return
    try:
        os.link(temporary, path)  # never overwrite a file created meanwhile
    finally:
        temporary.unlink()
