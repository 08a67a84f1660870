"""The ``ssh`` Compute Driver: Agents as hardened systemd units on hosts a team already has.

A pool of hosts (``hosts``) reached over SSH with pinned host keys (``connection``). Each
Namespace is placed on one host; each Agent gets a Unix user and one unit (``units``) whose
revision changes on activation. Every effect is one SSH command running occ's host helper
(``hostside``, installed with the stand-in gateway by ``bundle``), with a JSON request on
stdin: the credential travels only there and lands only in a 0600 file owned by the Agent's
user, removed on retirement.

* ``prepare_revision`` stages the revision's snapshot (and credential) in a directory of its
  own and starts nothing; ``activate_revision`` (after the worker committed the pointer) runs
  ``before_workload_start``, writes the Agent's unit with the accepted placeholders and
  restarts it when it changed or stopped, then reads the gateway's ``/healthz`` through an
  SSH tunnel: the activation carries the startup warnings the gateway answers with there. A
  failed activation revokes what the hooks granted (``before_workload_stop``).
* ``stop_revision`` and ``retire_revision`` revoke first, then stop (and remove exactly the
  revision's files, and the unit when it runs that revision).
* Observation is one command per host (``observe``) listing every Namespace, Agent, revision
  and unit there, cached for ``observation_ttl_s`` and dropped after any change on the host:
  many Agents' passes in a row cost one command, not one each; ``observe_revisions`` (the
  fleet's bulk observation) reads each host once (``observation``).

A host that cannot be reached defers the work (``SSH_HOST_UNREACHABLE``, transient); a
Namespace found on no host of the pool while every host answered has lost its host
(``SSH_HOST_REMOVED``, permanent).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from occ.drivers.compute import base, standin
from occ.drivers.compute import hooks as lifecycle
from occ.drivers.compute.ssh import (
    bundle,
    connection,
    gateway_health,
    hosts,
    observation,
    units,
)
from occ.settings.config import Settings

HOST_REMOVED: Final = observation.HOST_REMOVED
COMMAND_FAILED: Final = "SSH_HOST_COMMAND_FAILED"
NOT_READY: Final = "REVISION_INCOMPLETE"
MAINTENANCE_INTERVAL_S: Final = 30.0
_PERMANENT: Final = frozenset({"SSH_REQUEST_INVALID"})


class SshComputeDriver:
    """Namespaces placed on pool hosts; Agent revisions as hardened units there."""

    name = "ssh"
    capabilities: base.Capabilities

    def __init__(
        self,
        pool: Sequence[hosts.Host],
        *,
        root: str = "/var/lib/occ",
        connections: connection.Connections | None = None,
        hooks: lifecycle.HookDispatcher | None = None,
        command: Sequence[str] | None = None,
        limits: units.Limits = units.Limits(),  # noqa: B008 - frozen
        maintenance_interval_s: float | None = MAINTENANCE_INTERVAL_S,
        readiness_wait_s: float = 3.0,
        observation_ttl_s: float = 1.0,
        timeout_s: float = 10.0,
    ) -> None:
        if not root.startswith("/") or any(c.isspace() or c in "\"'\\" for c in root):
            raise base.PermanentDriverError(
                hosts.SETTINGS_INVALID, "ssh_root must be an absolute path without spaces"
            )
        if command is not None and (not command or not command[0].startswith("/")):
            raise base.PermanentDriverError(
                hosts.SETTINGS_INVALID, "ssh_gateway_command must start with an absolute path"
            )
        self.pool = tuple(pool)
        self.root = root.rstrip("/")
        self.connections = connections or connection.Connections(timeout_s=timeout_s)
        self.hooks = hooks if hooks is not None else lifecycle.HookDispatcher()
        self.command = tuple(command) if command is not None else None
        self.limits = limits
        self.capabilities = base.after_commit(maintenance_interval_s)
        self.readiness_wait_s = readiness_wait_s
        self.observation_ttl_s = observation_ttl_s
        self._installed: dict[str, str] = {}
        self._observed: dict[str, tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls, settings: Settings, *, hooks: lifecycle.HookDispatcher | None = None
    ) -> SshComputeDriver:
        return cls(
            hosts.parse_pool(settings.ssh_hosts),
            root=settings.ssh_root,
            hooks=hooks,
            command=settings.ssh_gateway_command,
            maintenance_interval_s=(
                settings.maintenance_interval_ms / 1000
                if settings.maintenance_interval_ms
                else MAINTENANCE_INTERVAL_S
            ),
            timeout_s=settings.ssh_connect_timeout_ms / 1000,
        )

    def revision_capabilities(self, revision: base.RevisionSpec) -> base.Capabilities:
        return self.capabilities

    def close(self) -> None:
        self.connections.close()

    # -- contract: the pool and Namespaces -----------------------------------------------

    def preflight(self) -> None:
        """Every host answers with its pinned key and has the helper installed; a host that
        cannot be reached only defers its work, a wrong host key stops the start."""
        operation = base.Operation("preflight", "", threading.Event())
        for host in self.pool:
            try:
                self._observe(operation, host)
            except base.TransientDriverError:
                continue

    def ensure_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        located = self._locate(operation, namespace.id)
        host = located[0] if located else hosts.ranked(self.pool, namespace.id)[0]
        self._call(operation, host, "ensure-namespace", {"namespace": namespace.id})
        self.hooks.after_namespace_prepared(operation, namespace)
        return base.Ready({"host": host.name})

    def delete_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        located = self._locate(operation, namespace.id)
        if located is not None:
            self.hooks.before_namespace_delete(operation, namespace)
            self._call(operation, located[0], "delete-namespace", {"namespace": namespace.id})
        return base.Ready()

    # -- contract: revisions --------------------------------------------------------------

    def prepare_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Observation:
        """Stage the snapshot (and credential) in the revision's directory; start nothing."""
        host, _ = self._placed(operation, revision.namespace_id)
        credential = revision.credential
        request = {
            **_ids(revision),
            "config": standin.configuration_text(revision.configuration_document),
            "credential": credential.value if credential is not None else None,
            "fingerprintKey": credential.fingerprint_key if credential is not None else None,
        }
        self._call(operation, host, "stage", request)
        return base.Ready({"host": host.name})

    def activate_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Activation | base.Pending | base.Failed:
        """Point the Agent's unit at the revision (restarting it), then check its health: the
        activation carries the startup warnings its gateway reports in ``/healthz``."""
        host, seen = self._placed(operation, revision.namespace_id)
        environment = self.hooks.before_workload_start(operation, revision)
        try:
            staged = observation.agent(seen, revision)
            credential = revision.credential is not None or observation.has_credential(
                staged, revision
            )
            unit = units.render(
                revision,
                root=self.root,
                bind=host.bind,
                command=self.command,
                environment=environment,
                credential=credential,
                limits=self.limits,
            )
            answer = self._call(operation, host, "activate", {**_ids(revision), "unitText": unit})
            port = int(answer["port"])
            warnings = self._startup_warnings(operation, host, port, revision.revision_id)
        except BaseException:
            self.hooks.compensate_workload_start(operation, revision)
            raise
        if warnings is None:
            return base.Pending(NOT_READY)
        return base.Activation(f"http://{host.host}:{port}", warnings)

    def stop_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Revoke, then stop the unit when it runs this revision; keep every file."""
        self._tear_down(operation, revision, "stop")

    def retire_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Revoke, stop, then remove the revision's files (and the unit when it runs it)."""
        self._tear_down(operation, revision, "retire")

    def delete_agent_credentials(
        self, operation: base.Operation, namespace_id: str, agent_id: str
    ) -> None:
        """Remove the Agent's unit, files and user from its host."""
        host, _ = self._placed(operation, namespace_id)
        self._call(operation, host, "delete-agent", {"namespace": namespace_id, "agent": agent_id})

    # -- observation ------------------------------------------------------------------------

    def observe_revisions(
        self, revisions: Sequence[base.RevisionSpec]
    ) -> Mapping[str, base.Observed]:
        """Read-only, one ``observe`` command per host (however many revisions it holds): a
        revision is healthy while its Agent's unit runs it and its gateway answers its
        ``/healthz`` (the helper checks it on the host); its endpoint is that unit's port.

        A revision on an unreachable host is ``SSH_HOST_UNREACHABLE``; one whose Namespace is on
        no host of the pool, ``SSH_HOST_REMOVED``.
        """
        operation = base.Operation("observation", "", threading.Event())
        seen: dict[str, dict[str, Any] | None] = {}
        for host in self.pool:
            try:
                seen[host.name] = self._observe(operation, host)
            except base.TransientDriverError:
                seen[host.name] = None
        observed: dict[str, base.Observed] = {}
        for revision in revisions:
            observed[revision.revision_id] = observation.revision_state(self.pool, seen, revision)
        return observed

    def observe_host(self, operation: base.Operation, host: hosts.Host) -> dict[str, Any]:
        """Everything on ``host``, read with one command (cached briefly)."""
        return self._observe(operation, host)

    def _observe(self, operation: base.Operation, host: hosts.Host) -> dict[str, Any]:
        with self._lock:
            cached = self._observed.get(host.name)
        if cached is not None and time.monotonic() - cached[0] < self.observation_ttl_s:
            return cached[1]
        seen = self._call(operation, host, "observe", {})
        with self._lock:
            self._observed[host.name] = (time.monotonic(), seen)
        return seen

    def _locate(
        self, operation: base.Operation, namespace_id: str
    ) -> tuple[hosts.Host, dict[str, Any]] | None:
        """The host holding the Namespace and what it holds; ``None`` when no host does and
        every host answered.

        Hosts are asked in placement order, so the usual answer costs one (cached) command.
        """
        unreachable: list[str] = []
        for host in hosts.ranked(self.pool, namespace_id):
            try:
                seen = self._observe(operation, host)
            except base.TransientDriverError as exc:
                if exc.code != connection.UNREACHABLE:
                    raise
                unreachable.append(host.name)
                continue
            if namespace_id in seen["namespaces"]:
                return host, seen
        if unreachable:
            raise base.TransientDriverError(
                connection.UNREACHABLE,
                f"the Namespace may be on unreachable hosts: {', '.join(unreachable)}",
            )
        return None

    def _placed(
        self, operation: base.Operation, namespace_id: str
    ) -> tuple[hosts.Host, dict[str, Any]]:
        located = self._locate(operation, namespace_id)
        if located is None:
            raise base.PermanentDriverError(
                HOST_REMOVED, "the Namespace is on no host of the pool: was its host removed?"
            )
        return located

    # -- internals ----------------------------------------------------------------------

    def _tear_down(self, operation: base.Operation, revision: base.RevisionSpec, verb: str) -> None:
        host, seen = self._placed(operation, revision.namespace_id)
        agent = observation.agent(seen, revision)
        if agent is None or revision.revision_id not in agent["revisions"]:
            return  # never staged here, or retired already: nothing runs, nothing to revoke
        self.hooks.before_workload_stop(operation, revision)
        self._call(operation, host, verb, _ids(revision))

    def _startup_warnings(
        self, operation: base.Operation, host: hosts.Host, port: int, revision_id: str
    ) -> tuple[base.StartupWarning, ...] | None:
        """The startup warnings of the gateway once its ``/healthz`` answers for the revision
        (asked again for up to ``readiness_wait_s``); ``None`` when it does not in time."""
        deadline = time.monotonic() + self.readiness_wait_s
        while True:
            try:
                response = self.connections.get(operation, host, port, "/healthz")
            except base.TransientDriverError:
                response = b""
            document = gateway_health.document(response, revision_id)
            warnings = None if document is None else standin.startup_warnings(document)
            if warnings is not None:
                return warnings
            if time.monotonic() >= deadline:
                return None
            operation.wait(0.1)

    def _call(
        self, operation: base.Operation, host: hosts.Host, verb: str, request: dict[str, Any]
    ) -> dict[str, Any]:
        """Run one helper verb on ``host``; its answer (errors classified, never echoed)."""
        self._install(operation, host)
        if verb != "observe":
            with self._lock:
                self._observed.pop(host.name, None)
        payload = json.dumps({**request, "root": self.root, "init": host.init})
        completed = self.connections.run(
            operation, host, f"{self._sudo(host)}python3 {self.root}/{bundle.HELPER} {verb}",
            stdin=payload,
        )  # fmt: skip
        answer = _answer(completed.stdout)
        if answer is None:
            raise base.TransientDriverError(
                COMMAND_FAILED, f"host {host.name}: {verb} exited {completed.status}"
            )
        if not answer.get("ok"):
            code, reason = str(answer.get("code")), f"host {host.name}: {answer.get('reason')}"
            if code in _PERMANENT:
                raise base.PermanentDriverError(code, reason)
            raise base.TransientDriverError(code, reason)
        return answer

    def _install(self, operation: base.Operation, host: hosts.Host) -> None:
        """Install (or update) the helper and the stand-in library, once per host."""
        wanted = bundle.build()
        if self._installed.get(host.name) == wanted.digest:
            return
        found = self.connections.run(operation, host, wanted.check_command(self.root))
        if found.stdout.strip() != wanted.digest:
            installed = self.connections.run(
                operation,
                host,
                self._sudo(host) + wanted.install_command(self.root),
                stdin=wanted.encoded,
            )
            if installed.status != 0:
                raise base.TransientDriverError(
                    COMMAND_FAILED, f"host {host.name}: installing occ's helper failed"
                )
        self._installed[host.name] = wanted.digest

    @staticmethod
    def _sudo(host: hosts.Host) -> str:
        return "" if host.user == "root" else "sudo -n "


def _ids(revision: base.RevisionSpec) -> dict[str, str]:
    return {
        "namespace": revision.namespace_id,
        "agent": revision.agent_id,
        "revision": revision.revision_id,
    }


def _answer(stdout: str) -> dict[str, Any] | None:
    lines = stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None
