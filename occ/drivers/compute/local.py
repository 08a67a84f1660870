"""The ``local`` Compute Driver: infrastructure as directories and processes on this machine.

State lives on disk under ``OCC_LOCAL_ROOT`` (never only in memory), so a restarted worker
finds everything again. Each effect appends a ``started`` and an ``ended`` line to
``effects.jsonl`` with the claim token that made it: the record fault tests read to prove
no item ran twice at once.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from occ.config import Settings
from occ.drivers.compute import base


class LocalComputeDriver:
    """Namespaces are directories; Agent revisions (with Agent deployment) are processes."""

    name = "local"
    capabilities = base.Capabilities(activation_order=base.ActivationOrder.AFTER_COMMIT)

    def __init__(self, root: Path, *, effect_delay_s: float = 0.0) -> None:
        self.root = root
        self.effect_delay_s = effect_delay_s

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalComputeDriver:
        return cls(Path(settings.local_root).resolve(),
                   effect_delay_s=settings.local_effect_delay_ms / 1000)

    # -- contract -------------------------------------------------------------------------

    def preflight(self) -> None:
        try:
            (self.root / "namespaces").mkdir(parents=True, exist_ok=True)
            probe = self.root / f".preflight-{os.getpid()}"
            probe.write_text("ok", encoding="utf-8")
            probe.unlink()
        except OSError as exc:
            raise base.PermanentDriverError("LOCAL_ROOT_UNUSABLE", type(exc).__name__) from None

    def ensure_namespace(self, operation: base.Operation,
                         namespace: base.NamespaceSpec) -> base.Observation:
        with self._effect(operation, "ensure_namespace", namespaceId=namespace.id):
            directory = self._namespace_dir(namespace.id)
            directory.mkdir(parents=True, exist_ok=True)
            _write_json(directory / "namespace.json",
                        {"id": namespace.id, "name": namespace.name,
                         "existingNamespace": namespace.existing_namespace})
        return base.Ready({"path": str(directory)})

    def delete_namespace(self, operation: base.Operation,
                         namespace: base.NamespaceSpec) -> base.Observation:
        with self._effect(operation, "delete_namespace", namespaceId=namespace.id):
            shutil.rmtree(self._namespace_dir(namespace.id), ignore_errors=True)
        return base.Ready()

    # -- helpers --------------------------------------------------------------------------

    def _namespace_dir(self, namespace_id: str) -> Path:
        return self.root / "namespaces" / namespace_id

    def _effect(self, operation: base.Operation, op: str, **fields: Any) -> _Effect:
        return _Effect(self, operation, op, fields)

    def record(self, entry: dict[str, Any]) -> None:
        """Append one line to the effect journal (one write: lines never interleave)."""
        self.root.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.root / "effects.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def effects(self) -> list[dict[str, Any]]:
        """Every recorded effect, oldest first."""
        path = self.root / "effects.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]


class _Effect:
    """Times one effect, honours the abort event, and journals it with its claim token."""

    def __init__(self, driver: LocalComputeDriver, operation: base.Operation, op: str,
                 fields: dict[str, Any]) -> None:
        self.driver, self.operation, self.op, self.fields = driver, operation, op, fields

    def _entry(self, phase: str, **more: Any) -> dict[str, Any]:
        return {"phase": phase, "op": self.op, "workId": self.operation.work_id,
                "token": self.operation.claim_token, "pid": os.getpid(),
                "startedAt": self.started, **self.fields, **more}

    def __enter__(self) -> None:
        self.operation.check()
        self.started = time.time()
        self.driver.record(self._entry("started"))
        if self.driver.effect_delay_s:
            self.operation.wait(self.driver.effect_delay_s)

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.driver.record(self._entry("ended", endedAt=time.time(),
                                       outcome="done" if kind is None else kind.__name__))


def _write_json(path: Path, document: dict[str, Any]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(document, indent=2), encoding="utf-8")
    temporary.replace(path)
