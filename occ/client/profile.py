"""The client's profile: the API URL and key, kept in the user's config directory.

``$XDG_CONFIG_HOME/occ/profile.json`` (else ``~/.config/occ/profile.json``), written mode 0600
in a 0700 directory by ``occ login``; ``OCC_URL`` and ``OCC_API_KEY`` override its fields.
These are the client's settings, not the server's (``occ.settings.config``): the caller hands in the
environment, nothing here reads ``os.environ``. The key is only ever in the ``key`` field.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from occ.client import http

FILE_NAME: Final = "profile.json"
_KEY: Final = re.compile(r"occ_[A-Za-z0-9_-]+")


class ProfileError(Exception):
    """No usable profile: what is missing and how to get it (never the key)."""


@dataclass(frozen=True)
class Profile:
    """Where the API is and the key to call it with; ``repr`` never shows the key."""

    url: str
    key: str = field(repr=False)


def path(environ: Mapping[str, str]) -> Path:
    """Where the profile lives for this environment."""
    base = environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "occ" / FILE_NAME


def check_key(text: str) -> str:
    """An API key (``occ_<keyId>_<secret>``) with surrounding whitespace removed."""
    key = text.strip()
    if not _KEY.fullmatch(key):
        raise ProfileError("the key is not an occ API key (occ_<keyId>_<secret>)")
    return key


def load(environ: Mapping[str, str]) -> Profile:
    """The profile with ``OCC_URL`` / ``OCC_API_KEY`` applied over the file's fields."""
    stored: dict[str, object] = {}
    where = path(environ)
    try:
        document = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        document = {}
    except (OSError, ValueError) as error:
        raise ProfileError(f"cannot read the profile {where}: {type(error).__name__}") from None
    if isinstance(document, dict):
        stored = document
    url = environ.get("OCC_URL") or stored.get("url")
    key = environ.get("OCC_API_KEY") or stored.get("key")
    if not isinstance(url, str) or not isinstance(key, str):
        raise ProfileError(
            "not logged in: run occ login --url URL --key-file FILE (or set OCC_URL and "
            "OCC_API_KEY)"
        )
    try:
        return Profile(http.check_url(url), check_key(key))
    except http.ApiError as error:
        raise ProfileError(error.detail) from None


def save(environ: Mapping[str, str], profile: Profile) -> Path:
    """Write the profile (0600, replacing any earlier one atomically); its path."""
    where = path(environ)
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = where.with_name(f".{FILE_NAME}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump({"url": profile.url, "key": profile.key}, handle)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, where)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return where
