"""The IAM hook that issues a runtime identity to every workload and revokes it before stop.

Each revision's workload gets one identity, an opaque reference (``opaque-identity:<uuid>``)
that the runtime presents and the IAM side resolves; the value carries no secret. The hook
records every identity it issued in a ledger, one JSON file per revision under
``<root>/<namespace id>/``, written atomically: ``issuedAt`` when issued, ``revokedAt`` once
revoked. Workers sharing the ledger (one machine, or a shared volume) see the same records.

* ``before_workload_start`` issues the revision's identity, or hands out the one already
  issued and not revoked (a repeated pass), and contributes it as ``RUNTIME_IDENTITY``.
* ``before_workload_stop`` revokes it before the workload stops; a ledger that cannot be
  written fails the stop, so the workload is kept until the revocation is recorded.
* ``before_namespace_delete`` refuses while an identity of the Namespace is still live
  (``IAM_IDENTITIES_OUTSTANDING``): only an empty tenant is deleted; then the ledger goes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from occ.drivers.compute import base, hooks

DRIVER_ID: Final = "runtime-identities"
ENVIRONMENT_NAME: Final = "RUNTIME_IDENTITY"
OUTSTANDING: Final = "IAM_IDENTITIES_OUTSTANDING"
LEDGER_UNAVAILABLE: Final = "IAM_LEDGER_UNAVAILABLE"

_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")


class RuntimeIdentities:
    """Issues, records and revokes one runtime identity per revision's workload."""

    capability: Final = "iam"
    id: Final = DRIVER_ID
    name: Final = f"iam:{DRIVER_ID}"

    def __init__(self, root: Path) -> None:
        self.root = root

    # -- lifecycle hooks ----------------------------------------------------------------

    def after_namespace_prepared(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """Make the Namespace's ledger directory."""
        operation.check()
        with _ledger_errors():
            self._namespace_dir(namespace.id).mkdir(parents=True, exist_ok=True)

    def before_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec, launch: hooks.LaunchSpec
    ) -> None:
        """Issue (or reuse the live) identity of ``revision`` and contribute it."""
        record = self.record(revision.namespace_id, revision.revision_id)
        if record is None or record.get("revokedAt") is not None:
            operation.check()
            record = {
                "identity": f"opaque-identity:{uuid.uuid4()}",
                "namespaceId": revision.namespace_id,
                "agentId": revision.agent_id,
                "revisionId": revision.revision_id,
                "servicePrincipalId": revision.service_principal_id,
                "issuedAt": time.time(),
                "revokedAt": None,
            }
            self._write(revision.namespace_id, revision.revision_id, record)
        launch.environment[ENVIRONMENT_NAME] = str(record["identity"])

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Revoke the revision's live identity (idempotent)."""
        record = self.record(revision.namespace_id, revision.revision_id)
        if record is None or record.get("revokedAt") is not None:
            return
        operation.check()
        self._write(
            revision.namespace_id, revision.revision_id, {**record, "revokedAt": time.time()}
        )

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """Refuse while a live identity remains; otherwise remove the Namespace's ledger."""
        live = [record for record in self.records(namespace.id) if record["revokedAt"] is None]
        if live:
            raise base.TransientDriverError(
                OUTSTANDING, f"{len(live)} runtime identities of the Namespace are not revoked"
            )
        operation.check()
        with _ledger_errors():
            shutil.rmtree(self._namespace_dir(namespace.id), ignore_errors=False)

    # -- the ledger -----------------------------------------------------------------------

    def record(self, namespace_id: str, revision_id: str) -> dict[str, Any] | None:
        """What the ledger holds for ``revision_id``, or ``None``."""
        path = self._path(namespace_id, revision_id)
        with _ledger_errors():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                return None
        return loaded if isinstance(loaded, dict) else None

    def records(self, namespace_id: str) -> list[dict[str, Any]]:
        """Every record of the Namespace, by revision id."""
        directory = self._namespace_dir(namespace_id)
        if not directory.is_dir():
            return []
        found = []
        for path in sorted(directory.glob("*.json")):
            record = self.record(namespace_id, path.stem)
            if record is not None:
                found.append(record)
        return found

    def _write(self, namespace_id: str, revision_id: str, record: dict[str, Any]) -> None:
        path = self._path(namespace_id, revision_id)
        with _ledger_errors():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(record, handle, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, path)

    def _namespace_dir(self, namespace_id: str) -> Path:
        return self.root / _checked(namespace_id)

    def _path(self, namespace_id: str, revision_id: str) -> Path:
        return self._namespace_dir(namespace_id) / f"{_checked(revision_id)}.json"


def _checked(identifier: str) -> str:
    if not _ID.fullmatch(identifier):
        raise base.PermanentDriverError(LEDGER_UNAVAILABLE, "an id is not usable as a file name")
    return identifier


@contextlib.contextmanager
def _ledger_errors() -> Iterator[None]:
    """An unreadable or unwritable ledger is a transient failure (the pass retries)."""
    try:
        yield
    except (OSError, ValueError) as exc:
        raise base.TransientDriverError(LEDGER_UNAVAILABLE, type(exc).__name__) from None
