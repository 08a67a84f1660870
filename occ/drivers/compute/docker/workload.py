"""What a revision's gateway container is: its hardened create arguments, its configuration
snapshot archive, and the readiness probe of its published port.

The container runs the image's entrypoint (the stand-in gateway) as a non-root user with a
read-only root filesystem, every capability dropped, ``no-new-privileges``, an init process,
memory, CPU and pids limits, no restart policy (the next pass restarts an exited one), its
port published on 127.0.0.1 only, the snapshot volume mounted read-only at ``/config`` and a
small tmpfs at ``/run/occ`` where the gateway writes the credential it reads from stdin.
The credential itself is never part of the create arguments (no environment entry, label or
argument holds it): the driver writes it to the container's stdin after start.

Pure functions (plus one HTTP probe); nothing here talks to the engine.
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.drivers.compute import base, standin
from occ.drivers.compute.docker import naming

PORT: Final = 8080
"""The gateway's port inside the container."""

HOST: Final = standin.LOOPBACK
"""The only host address a gateway port is published on."""

USER: Final = "10001:10001"
"""The non-root user every gateway runs as (the stand-in image names it ``occ``)."""

CONFIG_DIR: Final = "/config"
CONFIG_FILE: Final = CONFIG_DIR + "/configuration.json"
SECRETS_DIR: Final = "/run/occ"
CREDENTIAL_FILE: Final = SECRETS_DIR + "/credential"


@dataclass(frozen=True)
class Limits:
    """Resource limits of every gateway container."""

    memory_bytes: int
    nano_cpus: int
    pids: int
    log_max_bytes: int = 10 * 1024 * 1024
    """The size at which the engine rotates the container's log (``OCC_LOG_FILE_MAX_BYTES``)."""
    log_files: int = 3
    """The log files the engine keeps, the current one included (``OCC_LOG_FILE_BACKUPS`` + 1)."""


def gateway_config(
    revision: base.RevisionSpec,
    *,
    image: str,
    network: str,
    limits: Limits,
    environment: Mapping[str, str],
    with_credential: bool,
    healthcheck: Mapping[str, Any],
) -> dict[str, Any]:
    """Keyword arguments of ``Engine.create_container`` for the revision's gateway, with the
    engine ``healthcheck`` (``health.HealthCheck.engine_config``)."""
    command = [
        "--port",
        str(PORT),
        "--host",
        "0.0.0.0",  # noqa: S104 - inside the container; published on 127.0.0.1 only
        *standin.revision_arguments(revision, config=CONFIG_FILE),
    ]
    if with_credential:
        command += ["--credential-stdin", CREDENTIAL_FILE]
    labels = naming.of_revision(revision, naming.GATEWAY)
    labels[naming.CONFIGURATION_GENERATION] = str(revision.configuration_generation)
    labels[naming.CREDENTIAL_CHANNEL] = "stdin" if with_credential else "none"
    return {
        "image": image,
        "command": command,
        "name": naming.gateway(revision.revision_id),
        "user": USER,
        "labels": labels,
        "environment": dict(environment),
        "ports": [PORT],
        "stdin_open": with_credential,
        "tty": False,
        "healthcheck": dict(healthcheck),
        "host_config": {
            "network_mode": network,
            "port_bindings": {PORT: (HOST, None)},
            "binds": {naming.snapshot(revision.revision_id): {"bind": CONFIG_DIR, "mode": "ro"}},
            "tmpfs": {SECRETS_DIR: "rw,noexec,nosuid,nodev,size=1m,mode=0700,uid=10001,gid=10001"},
            "read_only": True,
            "privileged": False,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "init": True,
            "mem_limit": limits.memory_bytes,
            "memswap_limit": limits.memory_bytes,
            "nano_cpus": limits.nano_cpus,
            "pids_limit": limits.pids,
            "restart_policy": {"Name": "no"},
            # the engine writes the gateway's output: bounded like every log occ writes
            "log_config": {
                "type": "json-file",
                "config": {
                    "max-size": str(limits.log_max_bytes),
                    "max-file": str(limits.log_files),
                },
            },
        },
        "networking": {
            network: [naming.revision_alias(revision.revision_id)],
        },
    }


def snapshot_writer_config(revision: base.RevisionSpec, *, image: str) -> dict[str, Any]:
    """A container that is never started: the engine writes the snapshot through it."""
    return {
        "image": image,
        "name": naming.snapshot_writer(revision.revision_id),
        "user": USER,
        "labels": naming.of_revision(revision, naming.SNAPSHOT_WRITER),
        "network_disabled": True,
        "host_config": {
            "network_mode": "none",
            "binds": {naming.snapshot(revision.revision_id): {"bind": CONFIG_DIR, "mode": "rw"}},
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
        },
    }


def snapshot_archive(document: Mapping[str, Any]) -> bytes:
    """A tar holding ``configuration.json`` (read-only for the gateway's user)."""
    data = standin.configuration_text(document).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo(CONFIG_FILE.rsplit("/", 1)[1])
        info.size, info.mode, info.mtime = len(data), 0o444, int(time.time())
        info.uid = info.gid = 10001
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def credential_line(credential: base.Credential) -> bytes:
    """What the gateway reads from stdin: the value's line, then its fingerprint key's."""
    value = credential.value
    if "\n" in value or "\r" in value:
        raise base.PermanentDriverError(
            "DOCKER_CREDENTIAL_UNDELIVERABLE", "the credential holds a line break"
        )
    return value.encode() + b"\n" + credential.fingerprint_key.encode() + b"\n"


def published_port(container: Mapping[str, Any]) -> int | None:
    """The host port the gateway port is published on (re-read each time: it changes when
    the container restarts or its network endpoint is recreated)."""
    ports = (container.get("NetworkSettings") or {}).get("Ports") or {}
    for binding in ports.get(f"{PORT}/tcp") or []:
        if binding.get("HostIp") in (HOST, "") and str(binding.get("HostPort", "")).isdigit():
            return int(binding["HostPort"])
    return None


def listed_port(container: Mapping[str, Any]) -> int | None:
    """``published_port`` from a container listing's entry (its ``Ports``, not an inspect)."""
    for binding in container.get("Ports") or []:
        if (
            binding.get("PrivatePort") == PORT
            and binding.get("Type") == "tcp"
            and binding.get("IP") in (HOST, "")
            and isinstance(binding.get("PublicPort"), int)
        ):
            return int(binding["PublicPort"])
    return None
