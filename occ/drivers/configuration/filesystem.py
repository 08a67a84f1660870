"""The filesystem Configuration Driver: the development root only the API writes.

Each generation of a Configuration is one file, ``<root>/<namespace>/<configuration>/
<generation>-<token>.json`` (0600, directories 0700), written atomically before the row that
names it commits; the row holds a reference to the file (``{"$occConfiguration": {"driver":
"filesystem", "file": ...}}``). The token makes two concurrent updates of one generation write
two files: whichever update commits names its own. A file whose row never committed is left
behind, harmless. Rows written by the database driver (a document in the row) still load.
``OCC_DEVELOPMENT_CONFIGURATION_ROOT`` names the root; it is for development only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from occ.drivers.configuration import MARKER, reference_of
from occ.foundation import errors

DRIVER_ID: Final = "filesystem"

_ID: Final = re.compile(r"[a-z]{2,4}_[A-Za-z0-9_-]{1,64}")
_FILE: Final = re.compile(r"[0-9]{1,16}-[0-9a-f]{32}\.json")


class FilesystemConfigurations:
    """Documents as files under one root."""

    id: Final = DRIVER_ID

    def __init__(self, root: Path) -> None:
        self.root = root

    def keep(
        self, namespace_id: str, configuration_id: str, generation: int, document: dict[str, Any]
    ) -> dict[str, Any]:
        name = f"{generation}-{uuid.uuid4().hex}.json"
        directory = self._directory(namespace_id, configuration_id)
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            temporary = directory / f".{name}.tmp"
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                json.dump(document, handle, ensure_ascii=False, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, directory / name)
        except OSError as exc:
            raise errors.DependencyUnavailable(
                f"the Configuration root cannot be written ({type(exc).__name__}); the API "
                "needs OCC_DEVELOPMENT_CONFIGURATION_ROOT to be a writable directory"
            ) from None
        return {MARKER: {"driver": DRIVER_ID, "file": name}}

    def load(
        self, namespace_id: str, configuration_id: str, stored: Mapping[str, Any]
    ) -> dict[str, Any]:
        reference = reference_of(stored)
        if reference is None:
            return dict(stored)  # kept in the row by the database driver
        name = reference.get("file")
        if reference.get("driver") != DRIVER_ID or not isinstance(name, str):
            raise errors.DependencyUnavailable(
                "the Configuration's document is kept by another Configuration Driver"
            )
        if not _FILE.fullmatch(name):
            raise errors.DependencyUnavailable("the Configuration's reference is malformed")
        try:
            text = (self._directory(namespace_id, configuration_id) / name).read_text("utf-8")
            document = json.loads(text)
        except (OSError, ValueError) as exc:
            raise errors.DependencyUnavailable(
                f"the Configuration's document cannot be read ({type(exc).__name__})"
            ) from None
        if not isinstance(document, dict):
            raise errors.DependencyUnavailable("the Configuration's document is not an object")
        return document

    def forget(self, namespace_id: str, configuration_id: str) -> None:
        shutil.rmtree(self._directory(namespace_id, configuration_id), ignore_errors=True)

    def _directory(self, namespace_id: str, configuration_id: str) -> Path:
        for identifier in (namespace_id, configuration_id):
            if not _ID.fullmatch(identifier):
                raise errors.InvalidInput.at((), "an id is not usable as a file name")
        return self.root / namespace_id / configuration_id
