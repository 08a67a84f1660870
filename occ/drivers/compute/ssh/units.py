"""The systemd unit of an Agent's gateway on an SSH host: hardened, one per Agent.

The unit runs the revision's gateway as the Agent's own system user with a hardened sandbox
(``NoNewPrivileges``, ``ProtectSystem=strict``, ``ProtectHome``, ``PrivateTmp``,
``PrivateDevices``, kernel and control-group protection, no capabilities, native system calls
only) and resource limits (memory, tasks, CPU, open files). Its first line names the revision
it runs; ``@PORT@`` stands for the Agent's port, which the host fills in. The credential is
passed as a file path (``--credential-file``), never a value; launch placeholders accepted by
the hooks are ``Environment=`` entries. Every generated unit passes ``systemd-analyze verify``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from occ.drivers.compute import base, standin
from occ.drivers.compute.ssh import hostside

PORT: Final = "@PORT@"
STANDIN_COMMAND: Final = ("/usr/bin/python3", "-m", "occ.drivers.gateway")
"""The stand-in gateway, from the library occ installs under ``<root>/lib``."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one gateway unit."""

    memory_bytes: int = 268_435_456
    tasks: int = 128
    cpu_percent: int = 50
    open_files: int = 1024


def revision_dir(root: str, revision: base.RevisionSpec) -> str:
    """Where the revision's files live on its host."""
    return (
        f"{root}/namespaces/{revision.namespace_id}/agents/{revision.agent_id}"
        f"/revisions/{revision.revision_id}"
    )


def render(
    revision: base.RevisionSpec,
    *,
    root: str,
    bind: str,
    command: Sequence[str] | None,
    environment: Mapping[str, str],
    credential: bool,
    limits: Limits,
) -> str:
    """The unit file of ``revision``'s gateway (``PORT`` still to be filled in)."""
    directory = revision_dir(root, revision)
    user = hostside.user_name(revision.agent_id)
    arguments = [
        *(command or STANDIN_COMMAND),
        "--host",
        bind,
        "--port",
        PORT,
        *standin.revision_arguments(revision, config=f"{directory}/config.json"),
    ]
    if credential:
        arguments += ["--credential-file", f"{directory}/credential"]
    variables = dict(environment)
    if command is None:
        variables["PYTHONPATH"] = f"{root}/lib"
    lines = [
        f"{hostside.REVISION_LINE}{revision.revision_id}",
        "[Unit]",
        f"Description=occ gateway of Agent {revision.agent_id}",
        "After=network.target",
        "",
        "[Service]",
        "Type=simple",
        f"User={user}",
        f"Group={user}",
        f"WorkingDirectory={directory}",
        *(f'Environment="{name}={variables[name]}"' for name in sorted(variables)),
        f"ExecStart={' '.join(arguments)}",
        "Restart=on-failure",
        "RestartSec=2",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "PrivateDevices=yes",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectControlGroups=yes",
        "RestrictSUIDSGID=yes",
        "LockPersonality=yes",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=",
        "SystemCallArchitectures=native",
        "UMask=0077",
        f"MemoryMax={limits.memory_bytes}",
        f"TasksMax={limits.tasks}",
        f"CPUQuota={limits.cpu_percent}%",
        f"LimitNOFILE={limits.open_files}",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ]
    return "\n".join(lines)
