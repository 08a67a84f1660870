"""Start one revision's gateway process: launch hooks, port, command, log writer, ``runtime.json``.

A start that cannot happen revokes what the ``before_workload_start`` hooks granted; a missing
credential file the command needs, or a command that cannot run, is ``Failed`` (permanent).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute import hooks as lifecycle
from occ.drivers.compute.local import gateways, logfiles, store


def start(
    operation: base.Operation,
    revision: base.RevisionSpec,
    directory: Path,
    *,
    template: Sequence[str] | None,
    hooks: lifecycle.HookDispatcher,
    rotation: logfiles.Rotation,
    restarts: int,
    previous_port: object,
) -> dict[str, Any] | base.Failed:
    """Run the launch hooks and start the gateway, on the revision's previous port when it
    is free (so its endpoint outlives a restart of the worker or of ``occ dev``); its new
    ``runtime.json``."""
    credential = directory / store.CREDENTIAL
    credential_file = credential if credential.is_file() else None
    if credential_file is None and gateways.needs_credential(template):
        return base.Failed(
            "RUNTIME_STARTUP_FAILED",
            permanent=True,
            reason="the harness command needs a credential file and none was delivered",
        )
    environment = hooks.before_workload_start(operation, revision)
    try:
        operation.check()
        preferred = previous_port if isinstance(previous_port, int) else None
        port = gateways.free_port(preferred)
        command = gateways.command(
            template,
            revision,
            port=port,
            snapshot=directory / store.SNAPSHOT,
            credential_file=credential_file,
        )
        env = gateways.environment(directory, environment, stand_in=template is None)
        if preferred is not None and port != preferred:
            line = gateways.port_taken_line(preferred, port)
            logfiles.append(directory / store.LOG, line, rotation)
        log = logfiles.start_writer(directory / store.LOG, rotation)
        try:
            pid = gateways.start(command, directory, env, log)
        finally:
            os.close(log)  # the gateway holds the pipe now: its end is the writer's end
    except OSError as exc:
        hooks.compensate_workload_start(operation, revision)
        if isinstance(exc, FileNotFoundError | PermissionError | NotADirectoryError):
            return base.Failed(
                "RUNTIME_STARTUP_FAILED",
                permanent=True,
                reason=f"the gateway command cannot run: {type(exc).__name__}",
            )
        raise base.TransientDriverError("RUNTIME_STARTUP_FAILED", type(exc).__name__) from None
    except BaseException:
        hooks.compensate_workload_start(operation, revision)
        raise
    runtime: dict[str, Any] = {
        "namespaceId": revision.namespace_id,
        "agentId": revision.agent_id,
        "revisionId": revision.revision_id,
        "pid": pid,
        "port": port,
        "startedAt": time.time(),
        "command": command,
        "restarts": restarts,
        "environmentNames": sorted(environment),
    }
    store.write_json(directory / store.RUNTIME, runtime)
    return runtime
