"""The ``local`` Compute Driver: infrastructure as directories and processes on this machine.

State lives on disk under ``OCC_LOCAL_ROOT`` (never only in memory), so a restarted worker
finds everything again. Each effect appends a ``started`` and an ``ended`` line to
``effects.jsonl`` with the claim token that made it: the record fault tests read to prove
no item ran twice at once.

Layout under the root::

    effects.jsonl                        the effect journal
    namespaces/<namespace id>/           one directory per Namespace (namespace.json)
    agents/<agent id>/active.json        {"revisionId", "endpoint"}: the Agent's endpoint
    agents/<agent id>/.lock              serialises this Agent's effects across processes
    agents/<agent id>/revisions/<rev>/   configuration.json (the snapshot), runtime.json
                                         (pid, port, startedAt, command, ...), gateway.log

Each revision runs one gateway process on a free 127.0.0.1 port: the stand-in gateway
(``python -m occ.gateway``) or the command configured for the revision's harness, started
detached in its own session with a minimal environment (``PATH``, ``HOME`` = the revision
directory, the hooks' opaque placeholders, and the ``OCC_GATEWAY_DIR`` marker). Gateways
outlive the worker that started them; a worker finds a revision's process again through
``runtime.json`` and ``/proc`` (the pid is alive, not a zombie, and its command line
mentions the revision id or its environment carries the revision's marker), so a recycled
pid is never mistaken for a gateway.

Start failures: a gateway that exits before it ever answered healthy is restarted once by
the next ``prepare_revision``; when the restarted one exits too, ``prepare_revision`` revokes
the launch (``before_workload_stop`` hooks) and reports ``Failed("RUNTIME_STARTUP_FAILED",
permanent=False)``, and the pass after that (the retry) starts from scratch. A gateway that
was healthy and exited later is simply started again.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import occ
from occ.config import Settings
from occ.drivers.compute import base
from occ.drivers.compute import hooks as lifecycle

HOST: Final = "127.0.0.1"
"""Where every gateway listens."""

MARKER: Final = "OCC_GATEWAY_DIR"
"""Environment variable naming a gateway's revision directory: how ``/proc`` finds it."""

PLACEHOLDERS: Final = ("{port}", "{revision_id}", "{agent_id}", "{generation}", "{config}")
"""What a harness command template may contain; each is replaced in every argument."""

MAX_RESTARTS: Final = 1
"""Restarts of a gateway that exited before it became healthy, before ``Failed``."""

_PROC: Final = Path("/proc")
_SAFE_ID_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
)

_children: dict[int, subprocess.Popen[bytes]] = {}
"""Gateways this process started, only so their exit status is collected (no zombies)."""
_children_lock = threading.Lock()


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
    ) -> None:
        """``harness_commands`` maps a harness id to a command template (else the stand-in
        gateway runs); ``maintenance_interval_s`` enables the maintenance chain."""
        self.root = root
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
        if maintenance_interval_s is not None and maintenance_interval_s <= 0:
            raise ValueError("maintenance_interval_s must be positive")
        self.capabilities = base.Capabilities(
            activation_order=base.ActivationOrder.AFTER_COMMIT,
            maintenance_interval_s=maintenance_interval_s,
        )
        self.probe_timeout_s = probe_timeout_s
        self.stop_timeout_s = stop_timeout_s

    @classmethod
    def from_settings(cls, settings: Settings) -> LocalComputeDriver:
        return cls(
            Path(settings.local_root).resolve(),
            effect_delay_s=settings.local_effect_delay_ms / 1000,
        )

    # -- contract: Namespaces -------------------------------------------------------------

    def preflight(self) -> None:
        try:
            (self.root / "namespaces").mkdir(parents=True, exist_ok=True)
            probe = self.root / f".preflight-{os.getpid()}"
            probe.write_text("ok", encoding="utf-8")
            probe.unlink()
        except OSError as exc:
            raise base.PermanentDriverError("LOCAL_ROOT_UNUSABLE", type(exc).__name__) from None

    def ensure_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        with self._effect(operation, "ensure_namespace", namespaceId=namespace.id):
            directory = self._namespace_dir(namespace.id)
            directory.mkdir(parents=True, exist_ok=True)
            _write_json(
                directory / "namespace.json",
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
            directory = self._namespace_dir(namespace.id)
            if directory.exists():
                self.hooks.before_namespace_delete(operation, namespace)
            shutil.rmtree(directory, ignore_errors=True)
        return base.Ready()

    # -- contract: revisions --------------------------------------------------------------

    def prepare_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Observation:
        """Write the snapshot, start (or find) the gateway, probe ``/healthz`` once.

        ``Ready({"endpoint"})`` once the gateway answers 200 with this revision id,
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
            directory = self._revision_dir(revision.agent_id, revision.revision_id)
            runtime = _read_json(directory / "runtime.json") or {}
            if self._recorded_process(runtime, directory, revision.revision_id) is None:
                raise base.TransientDriverError(
                    "REVISION_NOT_RUNNING", "the revision's gateway is not running"
                )
            endpoint = _endpoint(int(runtime["port"]))
            pointer = {"revisionId": revision.revision_id, "endpoint": endpoint}
            active = self._agent_dir(revision.agent_id) / "active.json"
            if _read_json(active) != pointer:
                operation.check()
                _write_json(active, pointer)
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
            _remove_tree(self._revision_dir(revision.agent_id, revision.revision_id))
            active = self._agent_dir(revision.agent_id) / "active.json"
            pointer = _read_json(active)
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
            revisions = self._agent_dir(agent_id) / "revisions"
            for directory in sorted(revisions.iterdir()) if revisions.is_dir() else []:
                runtime = _read_json(directory / "runtime.json") or {}
                for pid in self._processes(runtime, directory, directory.name):
                    self._terminate(operation, pid)
            operation.check()
            _remove_tree(self._agent_dir(agent_id))

    # -- helpers for tests and the API ----------------------------------------------------

    def revision_process(self, agent_id: str, revision_id: str) -> int | None:
        """The pid of the revision's running gateway, if one runs."""
        directory = self._revision_dir(agent_id, revision_id)
        runtime = _read_json(directory / "runtime.json") or {}
        processes = self._processes(runtime, directory, revision_id)
        return processes[0] if processes else None

    def active_endpoint(self, agent_id: str, revision_id: str | None = None) -> str | None:
        """Where the Agent's endpoint points (``None`` when no revision was activated).

        With ``revision_id``, only when the pointer names that revision (the API passes the
        database's active revision: after a stop the file still names the stopped one).
        """
        pointer = _read_json(self._agent_dir(agent_id) / "active.json")
        if pointer is None or (
            revision_id is not None and pointer.get("revisionId") != revision_id
        ):
            return None
        endpoint = pointer.get("endpoint")
        return endpoint if isinstance(endpoint, str) else None

    def gateway_processes(self) -> list[int]:
        """Pids of every live gateway started under this root (via ``/proc``)."""
        prefix = os.fsencode(f"{MARKER}={self.root / 'agents'}{os.sep}")
        return [
            pid
            for pid, environment in _process_environments()
            if any(entry.startswith(prefix) for entry in environment)
        ]

    # -- revision internals ---------------------------------------------------------------

    def _prepare(self, operation: base.Operation, revision: base.RevisionSpec) -> base.Observation:
        _reap_children()
        directory = self._revision_dir(revision.agent_id, revision.revision_id)
        directory.mkdir(parents=True, exist_ok=True)
        _write_snapshot(directory / "configuration.json", revision.configuration_document)
        runtime_path = directory / "runtime.json"
        runtime = _read_json(runtime_path) or {}
        if self._recorded_process(runtime, directory, revision.revision_id) is None:
            operation.check()
            for orphan in _marked_processes(directory):  # started but never recorded
                self._terminate(operation, orphan)
            restarts = 0
            if runtime.get("pid") is not None and runtime.get("healthyAt") is None:
                restarts = int(runtime.get("restarts", 0)) + 1
                if restarts > MAX_RESTARTS:
                    self.hooks.before_workload_stop(operation, revision)
                    _write_json(
                        runtime_path,
                        {**runtime, "pid": None, "restarts": 0, "failedAt": time.time()},
                    )
                    return base.Failed(
                        "RUNTIME_STARTUP_FAILED",
                        permanent=False,
                        reason=f"the gateway exited before it became healthy ({restarts} starts)",
                    )
            started = self._start(operation, revision, directory, restarts)
            if isinstance(started, base.Failed):
                return started
            runtime = started
        operation.check()
        port = int(runtime["port"])
        if not self._healthy(port, revision.revision_id):
            return base.Pending("REVISION_INCOMPLETE")
        if runtime.get("healthyAt") is None:
            _write_json(runtime_path, {**runtime, "healthyAt": time.time()})
        return base.Ready({"endpoint": _endpoint(port)})

    def _start(
        self, operation: base.Operation, revision: base.RevisionSpec, directory: Path, restarts: int
    ) -> dict[str, Any] | base.Failed:
        """Run the launch hooks and start the gateway; its new ``runtime.json``."""
        environment = self.hooks.before_workload_start(operation, revision)
        try:
            operation.check()
            port = _free_port()
            command = self._command(revision, port, directory / "configuration.json")
            with (directory / "gateway.log").open("ab") as log:
                process = subprocess.Popen(  # noqa: S603 - our own argv, no shell
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=directory,
                    env=self._environment(revision, directory, environment),
                    start_new_session=True,
                    close_fds=True,
                )
        except OSError as exc:
            self.hooks.compensate_workload_start(operation, revision)
            if isinstance(exc, FileNotFoundError | PermissionError | NotADirectoryError):
                return base.Failed(
                    "RUNTIME_STARTUP_FAILED",
                    permanent=True,
                    reason=f"the gateway command cannot run: {type(exc).__name__}",
                )
            raise base.TransientDriverError("RUNTIME_STARTUP_FAILED", type(exc).__name__) from None
        except BaseException:
            self.hooks.compensate_workload_start(operation, revision)
            raise
        with _children_lock:
            _children[process.pid] = process
        runtime: dict[str, Any] = {
            "namespaceId": revision.namespace_id,
            "agentId": revision.agent_id,
            "revisionId": revision.revision_id,
            "pid": process.pid,
            "port": port,
            "startedAt": time.time(),
            "command": command,
            "restarts": restarts,
            "environmentNames": sorted(environment),
        }
        _write_json(directory / "runtime.json", runtime)
        return runtime

    def _command(self, revision: base.RevisionSpec, port: int, snapshot: Path) -> list[str]:
        template = self.harness_commands.get(revision.harness_id)
        if template is None:
            return [
                sys.executable,
                "-m",
                "occ.gateway",
                "--port",
                str(port),
                "--revision-id",
                revision.revision_id,
                "--agent-id",
                revision.agent_id,
                "--generation",
                str(revision.configuration_generation),
                "--config",
                str(snapshot),
            ]
        values = dict(
            zip(
                PLACEHOLDERS,
                (
                    str(port),
                    revision.revision_id,
                    revision.agent_id,
                    str(revision.configuration_generation),
                    str(snapshot),
                ),
                strict=True,
            )
        )
        command = []
        for part in template:
            for placeholder, value in values.items():
                part = part.replace(placeholder, value)  # noqa: PLW2901
            command.append(part)
        return command

    def _environment(
        self, revision: base.RevisionSpec, directory: Path, launch: Mapping[str, str]
    ) -> dict[str, str]:
        """The gateway's whole environment: nothing of the worker's (no settings, no keys)."""
        environment = dict(launch)
        environment.update(
            {
                "PATH": os.pathsep.join(os.get_exec_path()),
                "HOME": str(directory),
                "LANG": "C.UTF-8",
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                MARKER: str(directory),
            }
        )
        if revision.harness_id not in self.harness_commands:
            # The stand-in gateway is this package: find it even without an installation.
            environment["PYTHONPATH"] = str(Path(occ.__file__).resolve().parent.parent)
        return environment

    def _healthy(self, port: int, revision_id: str) -> bool:
        """One ``GET /healthz``: 200 naming this revision (a short timeout, no proxy)."""
        connection = http.client.HTTPConnection(HOST, port, timeout=self.probe_timeout_s)
        try:
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            body = response.read(65_536)
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()
        if response.status != 200:
            return False
        try:
            document = json.loads(body)
        except ValueError:
            return False
        return isinstance(document, dict) and document.get("revisionId") == revision_id

    def _stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        _reap_children()
        directory = self._revision_dir(revision.agent_id, revision.revision_id)
        runtime_path = directory / "runtime.json"
        runtime = _read_json(runtime_path) or {}
        if not directory.is_dir():
            return  # retired already (or never prepared): nothing runs, nothing to revoke
        processes = self._processes(runtime, directory, revision.revision_id)
        self.hooks.before_workload_stop(operation, revision)
        for pid in processes:
            operation.check()
            self._terminate(operation, pid)
        if runtime and runtime.get("pid") is not None:
            _write_json(runtime_path, {**runtime, "pid": None, "stoppedAt": time.time()})

    def _recorded_process(
        self, runtime: Mapping[str, Any], directory: Path, revision_id: str
    ) -> int | None:
        pid = runtime.get("pid")
        if (
            isinstance(pid, int)
            and runtime.get("port") is not None
            and _is_gateway(pid, directory, revision_id)
        ):
            return pid
        return None

    def _processes(
        self, runtime: Mapping[str, Any], directory: Path, revision_id: str
    ) -> list[int]:
        """The recorded gateway (first) and any other process marked with this directory.

        A revision without a directory has none (retirement kills before it removes), which
        spares repeated retirements of old revisions a walk through ``/proc``.
        """
        if not directory.is_dir():
            return []
        recorded = self._recorded_process(runtime, directory, revision_id)
        found = [] if recorded is None else [recorded]
        found.extend(pid for pid in _marked_processes(directory) if pid != recorded)
        return found

    def _terminate(self, operation: base.Operation, pid: int) -> None:
        """SIGTERM the gateway's process group, SIGKILL it after ``stop_timeout_s``."""
        try:
            group = os.getpgid(pid) == pid  # started in its own session: it leads a group
        except ProcessLookupError:
            return
        _signal(pid, signal.SIGTERM, group=group)
        deadline = time.monotonic() + self.stop_timeout_s
        while _alive(pid) and time.monotonic() < deadline:
            operation.wait(0.05)
        # Whatever is left: the gateway if it ignored SIGTERM, children it left in its group.
        _signal(pid, signal.SIGKILL, group=group)
        deadline = time.monotonic() + 5.0
        while _alive(pid):
            if time.monotonic() >= deadline:
                raise base.TransientDriverError(
                    "RUNTIME_STOP_TIMEOUT", "the gateway survived SIGKILL"
                )
            operation.wait(0.05)

    # -- helpers --------------------------------------------------------------------------

    def _namespace_dir(self, namespace_id: str) -> Path:
        return self.root / "namespaces" / namespace_id

    def _agent_dir(self, agent_id: str) -> Path:
        return self.root / "agents" / _checked_id(agent_id)

    def _revision_dir(self, agent_id: str, revision_id: str) -> Path:
        return self._agent_dir(agent_id) / "revisions" / _checked_id(revision_id)

    @contextlib.contextmanager
    def _agent_lock(
        self, operation: base.Operation, agent_id: str, *, create: bool = True
    ) -> Iterator[None]:
        """Hold the Agent's lock file (workers in other processes wait; abort ends the wait).

        With ``create=False`` an Agent without a directory is not locked (nor recreated):
        teardown after ``delete_agent_credentials`` finds nothing to protect.
        """
        directory = self._agent_dir(agent_id)
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            if create:
                raise
            yield
            return
        try:
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    operation.wait(0.02)
            yield
        finally:
            os.close(descriptor)

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
        return [
            json.loads(line)
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]


class _Effect:
    """Times one effect, honours the abort event, and journals it with its claim token."""

    def __init__(
        self, driver: LocalComputeDriver, operation: base.Operation, op: str, fields: dict[str, Any]
    ) -> None:
        self.driver, self.operation, self.op, self.fields = driver, operation, op, fields

    def _entry(self, phase: str, **more: Any) -> dict[str, Any]:
        return {
            "phase": phase,
            "op": self.op,
            "workId": self.operation.work_id,
            "token": self.operation.claim_token,
            "pid": os.getpid(),
            "startedAt": self.started,
            **self.fields,
            **more,
        }

    def __enter__(self) -> None:
        self.operation.check()
        self.started = time.time()
        self.driver.record(self._entry("started"))
        if self.driver.effect_delay_s:
            self.operation.wait(self.driver.effect_delay_s)

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.driver.record(
            self._entry(
                "ended", endedAt=time.time(), outcome="done" if kind is None else kind.__name__
            )
        )


# -- processes -----------------------------------------------------------------------------


def _reap_children() -> None:
    """Collect the exit status of gateways this process started and that have exited."""
    with _children_lock:
        for pid, process in list(_children.items()):
            if process.poll() is not None:
                del _children[pid]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    _reap_children()
    try:
        stat = (_PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:
        return _exists(pid)
    state = stat.rpartition(")")[2].split()[:1]
    return state not in (["Z"], ["X"], ["x"])


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_gateway(pid: int, directory: Path, revision_id: str) -> bool:
    """Whether ``pid`` is alive and is this revision's gateway (not a recycled pid)."""
    if not _alive(pid):
        return False
    if not _PROC.is_dir():
        return True  # no /proc (not Linux): trust runtime.json
    try:
        arguments = (_PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if revision_id.encode() in arguments:
        return True
    return _marker(directory) in _environment_of(pid)


def _marked_processes(directory: Path) -> list[int]:
    """Live processes whose environment carries this revision directory's marker."""
    marker = _marker(directory)
    return [
        pid for pid, environment in _process_environments() if marker in environment and _alive(pid)
    ]


def _marker(directory: Path) -> bytes:
    return os.fsencode(f"{MARKER}={directory}")


def _process_environments() -> Iterator[tuple[int, list[bytes]]]:
    """Every readable process environment (only this user's processes are readable)."""
    if not _PROC.is_dir():
        return
    for entry in os.scandir(_PROC):
        if entry.name.isdigit():
            environment = _environment_of(int(entry.name))
            if environment:
                yield int(entry.name), environment


def _environment_of(pid: int) -> list[bytes]:
    try:
        return (_PROC / str(pid) / "environ").read_bytes().split(b"\0")
    except OSError:
        return []


def _signal(pid: int, number: signal.Signals, *, group: bool) -> None:
    """Signal the process group ``pid`` leads (or only the process); gone is fine."""
    with contextlib.suppress(ProcessLookupError):
        if group:
            os.killpg(pid, number)
        else:
            os.kill(pid, number)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _endpoint(port: int) -> str:
    return f"http://{HOST}:{port}"


def _fields(revision: base.RevisionSpec) -> dict[str, Any]:
    return {
        "namespaceId": revision.namespace_id,
        "agentId": revision.agent_id,
        "revisionId": revision.revision_id,
    }


def _checked_id(value: str) -> str:
    """An id that is safe as one path component."""
    if not value or value.startswith("-") or not set(value) <= _SAFE_ID_CHARACTERS:
        raise base.PermanentDriverError("INVALID_IDENTIFIER", "not a usable id")
    return value


# -- files ---------------------------------------------------------------------------------


def _write_json(path: Path, document: dict[str, Any]) -> None:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(document, indent=2), encoding="utf-8")
    temporary.replace(path)


def _write_snapshot(path: Path, document: Mapping[str, Any]) -> None:
    """Write the configuration snapshot (unchanged content is not rewritten)."""
    text = json.dumps(document, indent=2, sort_keys=True, default=_plain)
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except FileNotFoundError:
        pass
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _remove_tree(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise base.TransientDriverError("LOCAL_STATE_UNREMOVABLE", type(exc).__name__) from None
