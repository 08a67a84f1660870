"""The helper the ``ssh`` driver installs on every host: one verb per SSH command.

Standard library only; occ copies this file to ``<root>/bin/occ-host.py``, with the two modules
it imports beside it (``gateway_health``, the ``/healthz`` probe, and ``host_supervisor``),
and runs it as ``python3 <root>/bin/occ-host.py <verb>`` with a JSON request on stdin, as root
(directly or through ``sudo -n``). It answers one JSON line on stdout, ``{"ok": true, ...}`` or
``{"ok": false, "code", "reason"}``, and never echoes its input: a staged credential travels
only on stdin and lands only in its 0600 file.

Layout under the root: ``namespaces/<ns>/agents/<agent>/revisions/<rev>/`` holds a revision's
``config.json`` (0644), ``credential`` and its ``fingerprint-key`` (0600, owned by the Agent's
user); the Agent's ``port`` file keeps its gateway's port across revisions. Each Agent has one
unit, whose first line names the revision it runs. Where systemd is PID 1 units live in
``/etc/systemd/system`` and run under systemd; elsewhere (containers, CI) they live in
``<root>/units`` and ``host_supervisor`` runs them from the same unit files, with their state
under ``<root>/run``.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

try:
    from occ.drivers.compute.ssh import gateway_health, host_supervisor
except ImportError:  # on a host, where occ is not installed: their copies beside this file
    import gateway_health  # type: ignore[import-not-found, no-redef]
    import host_supervisor  # type: ignore[import-not-found, no-redef]

ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
REVISION_LINE = "# occ-revision="
SYSTEMD_UNITS = Path("/etc/systemd/system")
STOP_TIMEOUT_S = 10.0
FINGERPRINT_KEY = "fingerprint-key"
"""The revision's fingerprint key beside its credential (``occ.foundation.fingerprints``)."""


class Refused(Exception):
    """The request cannot be served; ``code`` says why."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code


# -- layout ------------------------------------------------------------------------------


def unit_name(agent_id: str) -> str:
    """The systemd unit of an Agent's gateway."""
    return f"occ-agent-{hashlib.sha256(agent_id.encode()).hexdigest()[:12]}.service"


def user_name(agent_id: str) -> str:
    """The Unix user an Agent's gateway runs as (one per Agent, made on first staging)."""
    return f"occ-{hashlib.sha256(agent_id.encode()).hexdigest()[:12]}"


def checked(value: Any, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise Refused("SSH_REQUEST_INVALID", f"{what} is not valid")
    return value


def namespace_dir(request: dict[str, Any]) -> Path:
    return Path(request["root"]) / "namespaces" / checked(request["namespace"], ID, "namespace")


def agent_dir(request: dict[str, Any]) -> Path:
    return namespace_dir(request) / "agents" / checked(request["agent"], ID, "agent")


def revision_dir(request: dict[str, Any]) -> Path:
    return agent_dir(request) / "revisions" / checked(request["revision"], ID, "revision")


def uses_systemd(request: dict[str, Any]) -> bool:
    init = request.get("init", "auto")
    return init == "systemd" or (init == "auto" and Path("/run/systemd/system").is_dir())


def unit(request: dict[str, Any]) -> str:
    return unit_name(checked(request["agent"], ID, "agent"))


def unit_path(request: dict[str, Any]) -> Path:
    name = unit(request)
    directory = SYSTEMD_UNITS if uses_systemd(request) else Path(request["root"]) / "units"
    return directory / name


def write_if_changed(path: Path, text: str, mode: int, owner: str | None = None) -> bool:
    """Write ``text`` atomically unless the file holds it already; whether it changed."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except FileNotFoundError:
        pass
    temporary = path.with_name(f".{path.name}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(temporary, mode)
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(temporary, entry.pw_uid, entry.pw_gid)
    os.replace(temporary, path)
    return True


def unit_revision(path: Path) -> str | None:
    try:
        first = path.read_text(encoding="utf-8").splitlines()[0]
    except (FileNotFoundError, IndexError):
        return None
    return first[len(REVISION_LINE) :] if first.startswith(REVISION_LINE) else None


# -- units: systemd or the supervisor ----------------------------------------------------


def run_state(request: dict[str, Any]) -> Path:
    return Path(request["root"]) / "run" / unit(request)


def systemctl(*arguments: str) -> int:
    return subprocess.run(  # noqa: S603 - fixed program, checked unit names
        ["systemctl", *arguments],  # noqa: S607 - systemd's own, wherever the host has it
        capture_output=True,
        check=False,
    ).returncode


def unit_active(request: dict[str, Any]) -> bool:
    if uses_systemd(request):
        return systemctl("is-active", "--quiet", unit(request)) == 0
    return host_supervisor.running_pid(run_state(request)) is not None


def unit_stop(request: dict[str, Any]) -> None:
    if uses_systemd(request):
        systemctl("disable", "--now", unit(request))
        return
    host_supervisor.stop(run_state(request), STOP_TIMEOUT_S)


def unit_restart(request: dict[str, Any]) -> None:
    if uses_systemd(request):
        systemctl("daemon-reload")
        if systemctl("enable", unit(request)) != 0 or systemctl("restart", unit(request)):
            raise Refused("RUNTIME_STARTUP_FAILED", "systemd could not start the unit")
        return
    unit_stop(request)
    service = host_supervisor.parse_unit(unit_path(request).read_text(encoding="utf-8"))
    if not host_supervisor.start(run_state(request), service):
        raise Refused("RUNTIME_STARTUP_FAILED", "the supervised unit did not start")


# -- verbs -------------------------------------------------------------------------------


def observe(request: dict[str, Any]) -> dict[str, Any]:
    """Every Namespace, Agent and revision on this host, with each Agent's unit."""
    namespaces: dict[str, Any] = {}
    root = Path(request["root"]) / "namespaces"
    for namespace in sorted(root.iterdir()) if root.is_dir() else []:
        agents: dict[str, Any] = {}
        for agent in sorted((namespace / "agents").glob("*")):
            of_agent = {**request, "namespace": namespace.name, "agent": agent.name}
            port_file = agent / "port"
            revisions = sorted(p.name for p in (agent / "revisions").glob("*"))
            staged = [r for r in revisions if (agent / "revisions" / r / "credential").is_file()]
            running = unit_revision(unit_path(of_agent))
            active = unit_active(of_agent)
            port = int(port_file.read_text()) if port_file.exists() else None
            agents[agent.name] = {
                "revisions": revisions,
                "credentials": staged,
                "unitRevision": running,
                "active": active,
                "port": port,
                "healthy": bool(
                    active and port and running and gateway_health.healthy(port, running)
                ),
            }
        namespaces[namespace.name] = {"agents": agents}
    return {"namespaces": namespaces, "systemd": uses_systemd(request)}


def ensure_namespace(request: dict[str, Any]) -> dict[str, Any]:
    directory = namespace_dir(request)
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    return {"changed": write_if_changed(directory / "namespace.json", "{}\n", 0o644)}


def delete_namespace(request: dict[str, Any]) -> dict[str, Any]:
    shutil.rmtree(namespace_dir(request), ignore_errors=True)
    return {}


def stage(request: dict[str, Any]) -> dict[str, Any]:
    """Write the revision's files (and make the Agent's user); start nothing."""
    user = user_name(checked(request["agent"], ID, "agent"))
    try:
        pwd.getpwnam(user)
    except KeyError:
        command = ["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent"]
        command += ["--shell", "/usr/sbin/nologin", user]
        subprocess.run(command, capture_output=True, check=True)  # noqa: S603 - a checked name
    directory = revision_dir(request)
    directory.mkdir(mode=0o755, parents=True, exist_ok=True)
    changed = write_if_changed(directory / "config.json", request["config"], 0o644)
    if request.get("credential") is not None:
        credential = directory / "credential"
        changed = write_if_changed(credential, request["credential"], 0o600, user) or changed
        key = directory / FINGERPRINT_KEY
        changed = write_if_changed(key, request["fingerprintKey"], 0o600, user) or changed
    return {"changed": changed, "credential": (directory / "credential").exists()}


def activate(request: dict[str, Any]) -> dict[str, Any]:
    """Install the Agent's unit for this revision; (re)start it when it changed or stopped."""
    if not revision_dir(request).is_dir():
        raise Refused("REVISION_NOT_STAGED", "the revision was not prepared on this host")
    port_file = agent_dir(request) / "port"
    if not port_file.exists():
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            write_if_changed(port_file, f"{probe.getsockname()[1]}\n", 0o644)
    port = int(port_file.read_text())
    path = unit_path(request)
    path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    changed = write_if_changed(path, request["unitText"].replace("@PORT@", str(port)), 0o644)
    restarted = changed or not unit_active(request)
    if restarted:
        unit_restart(request)
    return {"port": port, "restarted": restarted}


def stop(request: dict[str, Any]) -> dict[str, Any]:
    """Stop the Agent's unit when it runs this revision; keep every file."""
    if unit_revision(unit_path(request)) == request["revision"]:
        unit_stop(request)
        return {"stopped": True}
    return {"stopped": False}


def retire(request: dict[str, Any]) -> dict[str, Any]:
    """Stop and remove the unit when it runs this revision, then the revision's files."""
    stopped = stop(request)["stopped"]
    if stopped:
        unit_path(request).unlink(missing_ok=True)
        if uses_systemd(request):
            systemctl("daemon-reload")
    directory = revision_dir(request)
    (directory / "credential").unlink(missing_ok=True)  # the secret first
    shutil.rmtree(directory, ignore_errors=True)
    return {"stopped": stopped}


def delete_agent(request: dict[str, Any]) -> dict[str, Any]:
    """Stop and remove the Agent's unit, its files and its user."""
    if unit_path(request).exists():
        unit_stop(request)
        unit_path(request).unlink(missing_ok=True)
    for credential in agent_dir(request).glob("revisions/*/credential"):
        credential.unlink(missing_ok=True)
    shutil.rmtree(agent_dir(request), ignore_errors=True)
    user = user_name(checked(request["agent"], ID, "agent"))
    subprocess.run(["userdel", user], capture_output=True, check=False)  # noqa: S603, S607
    return {}


VERBS = {
    "observe": observe,
    "ensure-namespace": ensure_namespace,
    "delete-namespace": delete_namespace,
    "stage": stage,
    "activate": activate,
    "stop": stop,
    "retire": retire,
    "delete-agent": delete_agent,
}


def main(argv: list[str]) -> int:
    try:
        verb = VERBS[argv[1]]
        request = json.loads(sys.stdin.read())
        answer = {"ok": True, **verb(request)}
    except Refused as exc:
        answer = {"ok": False, "code": exc.code, "reason": str(exc)}
    except (KeyError, IndexError, ValueError, OSError, subprocess.CalledProcessError) as exc:
        answer = {"ok": False, "code": "SSH_HOST_COMMAND_FAILED", "reason": type(exc).__name__}
    print(json.dumps(answer), flush=True)
    return 0 if answer["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
