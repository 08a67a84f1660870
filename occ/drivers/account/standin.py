"""The ``standin`` account Backend: a development Backend kept in a directory.

For the tests and ``occ dev`` (refused in production). Every process that names the same
directory sees the same Backend: its id (``backend.json``, made on first use), its workspaces
(``workspaces``: any name unless restricted), and one file per account holding its tokens, its
current token and whether it was withdrawn. ``withdraw`` and ``rotate`` are what an operator of
a real Backend does; occ itself only issues and reads. Files are written whole (a temporary
file renamed over) and readable by their owner only; a token is random and never leaves
``token_value``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import uuid
from collections.abc import Collection
from pathlib import Path
from typing import Any, Final

from occ.drivers.account import WORKSPACE_PATTERN, Binding, Credential
from occ.foundation import errors, ids

DRIVER_ID: Final = "standin"
_REFERENCE: Final = re.compile(rf"standin/(acc_{ids.UUID4_PATTERN})/([1-9][0-9]{{0,8}})")


class StandinBackend:
    """The stand-in Backend rooted at ``root``; ``workspaces`` limits the workspaces it has
    (empty: any well-formed name)."""

    driver: Final = DRIVER_ID

    def __init__(self, root: Path, workspaces: Collection[str] = ()) -> None:
        self._root = root
        self._workspaces = frozenset(workspaces)

    def __repr__(self) -> str:
        return f"StandinBackend({str(self._root)!r})"

    @property
    def backend_id(self) -> str:
        """This Backend's stable id (made on first use)."""
        path = self._root / "backend.json"
        try:
            return str(json.loads(path.read_text("utf-8"))["backendId"])
        except FileNotFoundError:
            self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
            # another process may make it first: its id stands
            with contextlib.suppress(FileExistsError):
                _write(path, {"backendId": f"standin-{uuid.uuid4()}"}, exclusive=True)
            return str(json.loads(path.read_text("utf-8"))["backendId"])

    def issue(self, namespace_id: str, account_id: str, workspace: str) -> Binding:
        if not WORKSPACE_PATTERN.fullmatch(workspace) or (
            self._workspaces and workspace not in self._workspaces
        ):
            raise errors.InvalidInput.at(
                ("workspace",), "the account Backend has no such workspace"
            )
        binding = Binding(self.backend_id, DRIVER_ID, workspace)
        record = {
            "namespaceId": namespace_id,
            "workspace": workspace,
            "backendId": binding.backend_id,
            "withdrawn": False,
            "tokens": {"1": secrets.token_urlsafe(32)},
            "current": 1,
        }
        (self._root / "accounts").mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            _write(self._account_path(account_id), record, exclusive=True)
        except FileExistsError:
            raise errors.Conflict("the account Backend issued this account already") from None
        return binding

    def current_token(self, account_id: str) -> str | None:
        record = self._read(account_id)
        if record is None or record["withdrawn"]:
            return None
        return f"standin/{account_id}/{record['current']}"

    def credential(self, token_reference: str) -> Credential | None:
        match = _REFERENCE.fullmatch(token_reference)
        record = None if match is None else self._read(match[1])
        if match is None or record is None or match[2] not in record["tokens"]:
            return None
        binding = Binding(str(record["backendId"]), DRIVER_ID, str(record["workspace"]))
        return Credential(match[1], binding, bool(record["withdrawn"]))

    def withdrawn(self, account_id: str) -> bool:
        record = self._read(account_id)
        return record is None or bool(record["withdrawn"])

    def token_value(self, token_reference: str) -> str:
        match = _REFERENCE.fullmatch(token_reference)
        record = None if match is None else self._read(match[1])
        if match is None or record is None or record["withdrawn"]:
            raise errors.SecretUnreadable("the account's access token is gone or withdrawn")
        value = record["tokens"].get(match[2])
        if not isinstance(value, str):
            raise errors.SecretUnreadable("the account's access token is gone or withdrawn")
        return value

    def withdraw(self, account_id: str) -> None:
        """Withdraw the account (what the Backend's operator does); idempotent."""
        record = self._require(account_id)
        record["withdrawn"] = True
        _write(self._account_path(account_id), record)

    def rotate(self, account_id: str) -> str:
        """Issue the account a new access token, now its current one; the new reference."""
        record = self._require(account_id)
        number = int(record["current"]) + 1
        record["tokens"][str(number)] = secrets.token_urlsafe(32)
        record["current"] = number
        _write(self._account_path(account_id), record)
        return f"standin/{account_id}/{number}"

    def move(self, account_id: str, workspace: str) -> None:
        """Move the account to another workspace (its tokens then belong to that one)."""
        record = self._require(account_id)
        record["workspace"] = workspace
        _write(self._account_path(account_id), record)

    def _require(self, account_id: str) -> dict[str, Any]:
        record = self._read(account_id)
        if record is None:
            raise errors.NotFound("the account Backend has no such account")
        return record

    def _read(self, account_id: str) -> dict[str, Any] | None:
        if not ids.is_valid("account", account_id):
            return None
        try:
            loaded = json.loads(self._account_path(account_id).read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise errors.DependencyUnavailable("the stand-in account Backend is unreadable") from (
                exc if isinstance(exc, OSError) else None
            )
        return loaded if isinstance(loaded, dict) else None

    def _account_path(self, account_id: str) -> Path:
        return self._root / "accounts" / f"{account_id}.json"


def _write(path: Path, record: dict[str, Any], *, exclusive: bool = False) -> None:
    """Write ``record`` whole, owner-only; ``exclusive`` refuses an existing file."""
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        json.dump(record, stream)
    try:
        if exclusive:
            os.link(temporary, path)  # fails if the file exists
        else:
            os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
