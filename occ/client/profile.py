"""The client's profile: the API URL and key, kept in the user's config directory.

``$XDG_CONFIG_HOME/occ/profile.json`` (else ``~/.config/occ/profile.json``), written mode 0600
in a 0700 directory by ``occ login``; ``OCC_URL`` and ``OCC_API_KEY`` override its fields. Its
``namespace`` (``occ config set namespace``, overridden by ``OCC_NAMESPACE``) is the Namespace of
a command given no ``-n``.
These are the client's settings, not the server's (``occ.settings.config``): the caller hands in the
environment, nothing here reads ``os.environ``. The key (an API key, or the CLI token of
``occ login --browser``) is only ever in the ``key`` field.
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
_CLI_TOKEN: Final = re.compile(
    r"ses_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.[0-9a-f]{64}"
)


class ProfileError(Exception):
    """No usable profile: what is missing and how to get it (never the key)."""

    code = "NOT_LOGGED_IN"


class ProfileFileError(ProfileError):
    """The profile file cannot be read (or is not a profile) or cannot be written."""

    code = "PROFILE_UNUSABLE"


@dataclass(frozen=True)
class Profile:
    """Where the API is and the key to call it with; ``repr`` never shows the key."""

    url: str
    key: str = field(repr=False)
    namespace: str | None = None


SETTABLE: Final = ("namespace",)
"""The profile's fields ``occ config set`` writes (``occ login`` writes the URL and key)."""


def path(environ: Mapping[str, str]) -> Path:
    """Where the profile lives for this environment."""
    base = environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "occ" / FILE_NAME


def check_key(text: str) -> str:
    """An API key (``occ_<keyId>_<secret>``) or a CLI token (``occ login --browser``'s
    ``ses_<id>.<secret>``) with surrounding whitespace removed."""
    key = text.strip()
    if not _KEY.fullmatch(key) and not is_cli_token(key):
        raise ProfileError("the key is not an occ API key (occ_<keyId>_<secret>)")
    return key


def is_cli_token(key: str) -> bool:
    """Whether ``key`` is a CLI token (``occ logout`` revokes one) rather than an API key."""
    return _CLI_TOKEN.fullmatch(key) is not None


def cli_session_of(key: str) -> str | None:
    """The session id of a CLI token (what ``DELETE /v1/sessions/<id>`` ends), else ``None``."""
    return key.partition(".")[0] if is_cli_token(key) else None


def load(environ: Mapping[str, str]) -> Profile:
    """The profile with ``OCC_URL`` / ``OCC_API_KEY`` applied over the file's fields (with both
    set, a file that cannot be read is left aside)."""
    try:
        stored = stored_fields(environ)
    except ProfileFileError:
        if not (environ.get("OCC_URL") and environ.get("OCC_API_KEY")):
            raise
        stored = {}
    url = environ.get("OCC_URL") or stored.get("url")
    key = environ.get("OCC_API_KEY") or stored.get("key")
    if not isinstance(url, str) or not isinstance(key, str):
        raise ProfileError(
            "not logged in: run occ login --url URL --key-file FILE (or set OCC_URL and "
            "OCC_API_KEY)"
        )
    namespace = environ.get("OCC_NAMESPACE") or stored.get("namespace")
    try:
        return Profile(
            http.check_url(url),
            check_key(key),
            namespace if isinstance(namespace, str) and namespace else None,
        )
    except http.ApiError as error:
        raise ProfileError(error.detail) from None


def stored_fields(environ: Mapping[str, str]) -> dict[str, object]:
    """The profile file's fields as written (none when there is no file)."""
    where = path(environ)
    try:
        document = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ProfileFileError(
            f"cannot read the profile {where}: {_reason(error, where)}"
        ) from None
    if not isinstance(document, dict):
        raise ProfileFileError(f"cannot read the profile {where}: not a JSON object")
    return dict(document)


def save(environ: Mapping[str, str], profile: Profile) -> Path:
    """Write the URL and key (0600, replacing any earlier file atomically), keeping the
    default Namespace when the URL stays the same (a file that cannot be read is replaced);
    its path."""
    try:
        stored = stored_fields(environ)
    except ProfileFileError:
        stored = {}
    fields: dict[str, object] = {"url": profile.url, "key": profile.key}
    namespace = profile.namespace or stored.get("namespace")
    if namespace and stored.get("url") in (None, profile.url):
        fields["namespace"] = namespace
    return write(environ, fields)


def forget_key(environ: Mapping[str, str]) -> Path:
    """Remove the key from the profile file (``occ logout``), keeping its other fields."""
    fields = stored_fields(environ)
    fields.pop("key", None)
    return write(environ, fields)


def set_field(environ: Mapping[str, str], name: str, value: str | None) -> Path:
    """Set (``None``: remove) one of the ``SETTABLE`` fields in the profile file; its path."""
    if name not in SETTABLE:
        raise ProfileError(f"{name!r} is not a profile setting ({', '.join(SETTABLE)})")
    fields = stored_fields(environ)
    if value is None:
        fields.pop(name, None)
    else:
        fields[name] = value
    return write(environ, fields)


def write(environ: Mapping[str, str], fields: Mapping[str, object]) -> Path:
    """Write the profile file (0600 in a 0700 directory, replacing it atomically); its path."""
    where = path(environ)
    try:
        _replace(where, fields)
    except OSError as error:
        raise ProfileFileError(
            f"cannot write the profile {where}: {_reason(error, where)}"
        ) from None
    return where


def _replace(where: Path, fields: Mapping[str, object]) -> None:
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = where.with_name(f".{FILE_NAME}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(dict(fields), handle)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, where)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _reason(error: Exception, where: Path) -> str:
    """Why a file operation on the profile ``where`` failed (and on which other file)."""
    if not isinstance(error, OSError) or not error.strerror:
        return type(error).__name__
    if error.filename is None or Path(error.filename) == where:
        return error.strerror
    return f"{error.filename}: {error.strerror}"
