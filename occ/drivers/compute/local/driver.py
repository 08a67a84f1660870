"""The ``LocalComputeDriver``: the Compute Driver contract over directories and processes.

Namespaces are directories; each Agent revision is one gateway process on 127.0.0.1
(``gateways``, started by ``gateway_start``). State lives on disk under the root (``store``),
never only in memory, so a restarted worker finds everything again; every operation is
journalled (``journal``); observations read the process table and the gateways' health
(``observation``).

Start failures: a gateway that exits before it ever answered healthy is restarted once by
the next ``prepare_revision``; when the restarted one exits too, ``prepare_revision`` revokes
the launch (``before_workload_stop`` hooks) and reports ``Failed("RUNTIME_STARTUP_FAILED",
permanent=False)``, and the pass after that (the retry) starts from scratch. A gateway that
was healthy and exited later is simply started again.

Credentials: a deploy pass's ``RevisionSpec.credential`` is written to the revision's 0600
``credential`` file before the gateway starts, which gets its path; a gateway restarted
without one (a maintenance pass) reuses the file. The value never reaches the environment,
``runtime.json``, the journal or a log line; retirement and Agent deletion remove the file.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from occ.drivers.compute import base, standin
from occ.drivers.compute import hooks as lifecycle
from occ.drivers.compute.local import (
    gateway_start,
    gateways,
    journal,
    logfiles,
    observation,
    store,
)
from occ.foundation import fingerprints
from occ.settings.config import Settings

MAX_RESTARTS: Final = 1
"""Restarts of a gateway that exited before it became healthy, before ``Failed``."""

MAINTENANCE_INTERVAL_MS: Final = 30_000
"""How often the active revisions are observed by default (a dead gateway is restarted)."""


class LocalComputeDriver:
    """Namespaces are directories; Agent revisions are gateway processes on 127.0.0.1."""

    name = "local"
    capabilities: base.Capabilities

    def __init__(
        self,
        root: Path,
        *,
        effect_delay_s: float = 0.0,
        hooks: lifecycle.HookDispatcher | None = None,
        harness_commands: Mapping[str, Sequence[str]] | None = None,
        maintenance_interval_s: float | None = None,
        probe_timeout_s: float = 0.3,
        stop_timeout_s: float = 10.0,
        rotation: logfiles.Rotation | None = None,
    ) -> None:
        """``harness_commands`` maps a harness id to a command template (else the stand-in
        gateway runs); ``maintenance_interval_s`` enables the maintenance chain; ``rotation``
        bounds the journal and every gateway log."""
        self.root = root
        self.layout = store.Layout(root)
        self.rotation = rotation or logfiles.Rotation()
        self.journal = journal.Journal(self.layout.journal, self.rotation)
        self.effect_delay_s = effect_delay_s
        self.hooks = hooks if hooks is not None else lifecycle.HookDispatcher()
        self.harness_commands = {
            harness: tuple(command) for harness, command in (harness_commands or {}).items()
        }
        for harness, command in self.harness_commands.items():
            if not command or not all(isinstance(part, str) for part in command):
                raise ValueError(
                    f"the command of harness {harness!r} must be a non-empty list of strings"
                )
        self.capabilities = base.after_commit(maintenance_interval_s)
        self.probe_timeout_s = probe_timeout_s
        self.stop_timeout_s = stop_timeout_s

    @classmethod
    def from_settings(
        cls, settings: Settings, *, hooks: lifecycle.HookDispatcher | None = None
    ) -> LocalComputeDriver:
        return cls(
            Path(settings.local_root).resolve(),
            hooks=hooks,
            effect_delay_s=settings.local_effect_delay_ms / 1000,
            maintenance_interval_s=(settings.maintenance_interval_ms or MAINTENANCE_INTERVAL_MS)
            / 1000,
            rotation=logfiles.Rotation(
                max_bytes=settings.log_file_max_bytes, backups=settings.log_file_backups
            ),
        )

    def revision_capabilities(self, revision: base.RevisionSpec) -> base.Capabilities:
        """Every revision has the driver's capabilities."""
        return self.capabilities

    # -- contract: Namespaces -------------------------------------------------------------

    def preflight(self) -> None:
        try:
            store.make_directories(self.layout.namespaces)
            probe = self.root / f".preflight-{os.getpid()}"
            store.write_text(probe, "ok")
            probe.unlink()
        except OSError as exc:
            raise base.PermanentDriverError("LOCAL_ROOT_UNUSABLE", type(exc).__name__) from None

    def ensure_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        with self._effect(operation, "ensure_namespace", namespaceId=namespace.id):
            directory = self.layout.namespace_dir(namespace.id)
            store.make_directories(directory)
            store.write_json(
                directory / store.NAMESPACE,
                {
                    "id": namespace.id,
                    "name": namespace.name,
                    "existingNamespace": namespace.existing_namespace,
                },
            )
            self.hooks.after_namespace_prepared(operation, namespace)
        return base.Ready({"path": str(directory)})

    def delete_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        with self._effect(operation, "delete_namespace", namespaceId=namespace.id):
            directory = self.layout.namespace_dir(namespace.id)
            if directory.exists():
                self.hooks.before_namespace_delete(operation, namespace)
            store.remove_tree(directory)
        return base.Ready()

    # -- contract: revisions --------------------------------------------------------------

    def prepare_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Observation:
        """Write the snapshot (and credential), start (or find) the gateway, probe it once.

        ``Ready({"endpoint"}, warnings)`` once the gateway answers 200 with this revision id
        (with the startup warnings it reported),
        ``Pending("REVISION_INCOMPLETE")`` before that; see the module for start failures.
        """
        with (
            self._effect(operation, "prepare_revision", **_fields(revision)),
            self._agent_lock(operation, revision.agent_id),
        ):
            return self._prepare(operation, revision)

    def activate_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Activation:
        """Point the Agent's endpoint (``active.json``) at the revision's running gateway."""
        with (
            self._effect(operation, "activate_revision", **_fields(revision)),
            self._agent_lock(operation, revision.agent_id, create=False),
        ):
            directory = self.layout.revision_dir(revision.agent_id, revision.revision_id)
            runtime = store.read_json(directory / store.RUNTIME) or {}
            if gateways.recorded_process(runtime, directory, revision.revision_id) is None:
                raise base.TransientDriverError(
                    observation.NOT_RUNNING, "the revision's gateway is not running"
                )
            endpoint = standin.endpoint(int(runtime["port"]))
            pointer = {"revisionId": revision.revision_id, "endpoint": endpoint}
            active = self.layout.active_pointer(revision.agent_id)
            if store.read_json(active) != pointer:
                operation.check()
                store.write_json(active, pointer)
        return base.Activation(endpoint)

    def stop_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """``before_workload_stop`` hooks, then stop the gateway; keep every file.

        ``active.json`` is left alone even when it names this revision: the reconciler
        clears the Agent's pointer in the database.
        """
        with (
            self._effect(operation, "stop_revision", **_fields(revision)),
            self._agent_lock(operation, revision.agent_id, create=False),
        ):
            self._stop(operation, revision)

    def retire_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Stop the revision, remove its directory, and ``active.json`` if it names it."""
        with (
            self._effect(operation, "retire_revision", **_fields(revision)),
            self._agent_lock(operation, revision.agent_id, create=False),
        ):
            self._stop(operation, revision)
            operation.check()
            directory = self.layout.revision_dir(revision.agent_id, revision.revision_id)
            # The credential first: should the rest resist removal, the secret is gone.
            (directory / store.CREDENTIAL).unlink(missing_ok=True)
            store.remove_tree(directory)
            active = self.layout.active_pointer(revision.agent_id)
            pointer = store.read_json(active)
            if pointer is not None and pointer.get("revisionId") == revision.revision_id:
                active.unlink(missing_ok=True)

    def delete_agent_credentials(
        self, operation: base.Operation, namespace_id: str, agent_id: str
    ) -> None:
        """Remove everything the Agent's runtime owned (called after every retirement).

        A gateway still running (a revision that was never retired) is terminated first.
        """
        with (
            self._effect(
                operation, "delete_agent_credentials", namespaceId=namespace_id, agentId=agent_id
            ),
            self._agent_lock(operation, agent_id, create=False),
        ):
            revisions = self.layout.revisions_dir(agent_id)
            directories = sorted(revisions.iterdir()) if revisions.is_dir() else []
            for directory in directories:
                runtime = store.read_json(directory / store.RUNTIME) or {}
                for pid in gateways.revision_processes(runtime, directory, directory.name):
                    gateways.terminate(operation, pid, timeout_s=self.stop_timeout_s)
            operation.check()
            for directory in directories:
                (directory / store.CREDENTIAL).unlink(missing_ok=True)
            store.remove_tree(self.layout.agent_dir(agent_id))

    def observe_revisions(
        self, revisions: Sequence[base.RevisionSpec]
    ) -> Mapping[str, base.Observed]:
        """Each revision's gateway, running and healthy or not (``observation``)."""
        return observation.observe(self.layout, revisions)

    # -- helpers for tests and the API ----------------------------------------------------

    def revision_process(self, agent_id: str, revision_id: str) -> int | None:
        """The pid of the revision's running gateway, if one runs."""
        directory = self.layout.revision_dir(agent_id, revision_id)
        runtime = store.read_json(directory / store.RUNTIME) or {}
        processes = gateways.revision_processes(runtime, directory, revision_id)
        return processes[0] if processes else None

    def active_endpoint(self, agent_id: str, revision_id: str | None = None) -> str | None:
        """Where the Agent's endpoint points (``None`` when no revision was activated).

        With ``revision_id``, only when the pointer names that revision (the API passes the
        database's active revision: after a stop the file still names the stopped one).
        """
        pointer = store.read_json(self.layout.active_pointer(agent_id))
        if pointer is None or (
            revision_id is not None and pointer.get("revisionId") != revision_id
        ):
            return None
        endpoint = pointer.get("endpoint")
        return endpoint if isinstance(endpoint, str) else None

    def gateway_processes(self) -> list[int]:
        """Pids of every live gateway started under this root (via ``/proc``)."""
        return gateways.processes_under(self.layout.agents)

    def effects(self) -> list[dict[str, Any]]:
        """Every recorded effect, oldest first."""
        return self.journal.entries()

    # -- revision internals ---------------------------------------------------------------

    def _prepare(self, operation: base.Operation, revision: base.RevisionSpec) -> base.Observation:
        gateways.reap_children()
        directory = self.layout.revision_dir(revision.agent_id, revision.revision_id)
        store.make_directories(directory)
        store.write_snapshot(directory / store.SNAPSHOT, revision.configuration_document)
        if revision.credential is not None:
            store.write_if_changed(directory / store.CREDENTIAL, revision.credential.value)
            store.write_if_changed(
                directory / fingerprints.KEY_FILE, revision.credential.fingerprint_key
            )
        runtime_path = directory / store.RUNTIME
        runtime = store.read_json(runtime_path) or {}
        if gateways.recorded_process(runtime, directory, revision.revision_id) is None:
            operation.check()
            for orphan in gateways.marked_processes(directory):  # started but never recorded
                gateways.terminate(operation, orphan, timeout_s=self.stop_timeout_s)
            restarts = 0
            if runtime.get("pid") is not None and runtime.get("healthyAt") is None:
                restarts = int(runtime.get("restarts", 0)) + 1
                if restarts > MAX_RESTARTS:
                    self.hooks.before_workload_stop(operation, revision)
                    store.write_json(
                        runtime_path,
                        {**runtime, "pid": None, "restarts": 0, "failedAt": time.time()},
                    )
                    return base.Failed(
                        "RUNTIME_STARTUP_FAILED",
                        permanent=False,
                        reason=f"the gateway exited before it became healthy ({restarts} starts)",
                    )
            started = gateway_start.start(
                operation,
                revision,
                directory,
                template=self.harness_commands.get(revision.harness_id),
                hooks=self.hooks,
                rotation=self.rotation,
                restarts=restarts,
                previous_port=runtime.get("port"),
            )
            if isinstance(started, base.Failed):
                return started
            runtime = started
        operation.check()
        port = int(runtime["port"])
        warnings = standin.status_of(port, revision.revision_id, timeout_s=self.probe_timeout_s)
        if warnings is None:
            return base.Pending("REVISION_INCOMPLETE")
        if runtime.get("healthyAt") is None:
            store.write_json(runtime_path, {**runtime, "healthyAt": time.time()})
        return base.Ready({"endpoint": standin.endpoint(port)}, warnings)

    def _stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        gateways.reap_children()
        directory = self.layout.revision_dir(revision.agent_id, revision.revision_id)
        runtime_path = directory / store.RUNTIME
        runtime = store.read_json(runtime_path) or {}
        if not directory.is_dir():
            return  # retired already (or never prepared): nothing runs, nothing to revoke
        processes = gateways.revision_processes(runtime, directory, revision.revision_id)
        self.hooks.before_workload_stop(operation, revision)
        for pid in processes:
            operation.check()
            gateways.terminate(operation, pid, timeout_s=self.stop_timeout_s)
        if runtime and runtime.get("pid") is not None:
            store.write_json(runtime_path, {**runtime, "pid": None, "stoppedAt": time.time()})

    def _agent_lock(
        self, operation: base.Operation, agent_id: str, *, create: bool = True
    ) -> contextlib.AbstractContextManager[None]:
        return store.agent_lock(operation, self.layout.agent_dir(agent_id), create=create)

    def _effect(self, operation: base.Operation, op: str, **fields: Any) -> journal.Effect:
        return self.journal.effect(operation, op, fields, delay_s=self.effect_delay_s)


def _fields(revision: base.RevisionSpec) -> dict[str, Any]:
    return {
        "namespaceId": revision.namespace_id,
        "agentId": revision.agent_id,
        "revisionId": revision.revision_id,
    }
