"""The SSH host pool: each host's address, login and pinned host key, and placement.

A pool comes from the startup configuration (``ssh_hosts``); every entry is checked when the
driver is built, so a bad pool stops the process at startup naming the entry and the key.
The host key is pinned: a connection whose server key differs is refused (no trust on first
use). A Namespace is placed on a host by rendezvous hashing over the pool's names
(``ranked``): adding or removing a host moves only the Namespaces it wins or held.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from occ.drivers.compute import base

SETTINGS_INVALID: Final = "SSH_SETTINGS_INVALID"

INITS: Final = ("auto", "systemd", "supervisor")
"""How a host runs units: detected, systemd, or occ's supervisor (hosts without systemd)."""

_NAME: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_USER: Final = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_KEYS: Final = frozenset(
    {"name", "host", "port", "user", "private_key_file", "host_key", "init", "bind"}
)


@dataclass(frozen=True)
class Host:
    """One host of the pool."""

    name: str
    host: str
    port: int
    user: str
    private_key_file: Path
    host_key: str
    """The server's public key, one OpenSSH line (``ssh-ed25519 AAAA...``)."""
    init: str = "auto"
    bind: str = "127.0.0.1"
    """Address the gateways listen on (loopback: reachable through SSH tunnels only)."""

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.user}@{self.host}:{self.port})"


def parse_pool(entries: Sequence[Mapping[str, Any]] | None) -> tuple[Host, ...]:
    """The pool of ``ssh_hosts``; ``PermanentDriverError`` naming the entry and key at fault."""
    if not entries:
        raise base.PermanentDriverError(SETTINGS_INVALID, "ssh_hosts: the pool has no host")
    hosts = tuple(_host(index, entry) for index, entry in enumerate(entries))
    names = [host.name for host in hosts]
    if len(set(names)) != len(names):
        raise base.PermanentDriverError(SETTINGS_INVALID, "ssh_hosts: two hosts share a name")
    return hosts


def _host(index: int, entry: Mapping[str, Any]) -> Host:
    where = f"ssh_hosts/{index}"

    def refuse(key: str, message: str) -> base.PermanentDriverError:
        return base.PermanentDriverError(SETTINGS_INVALID, f"{where}/{key}: {message}")

    if not isinstance(entry, Mapping):
        raise base.PermanentDriverError(SETTINGS_INVALID, f"{where}: must be a mapping")
    unknown = sorted(str(key) for key in set(entry) - _KEYS)
    if unknown:
        raise refuse(unknown[0], "unknown key")
    for key in ("name", "host", "user", "private_key_file", "host_key"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise refuse(key, "required, a non-empty string")
    if not _NAME.fullmatch(entry["name"]):
        raise refuse("name", "must be a lower-case DNS label")
    if not _USER.fullmatch(entry["user"]):
        raise refuse("user", "must be a Unix user name")
    port = entry.get("port", 22)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise refuse("port", "must be a TCP port")
    key_file = Path(entry["private_key_file"])
    if not key_file.is_absolute():
        raise refuse("private_key_file", "must be an absolute path")
    if len(entry["host_key"].split()) < 2:
        raise refuse("host_key", "must be one OpenSSH public key line (type and base64)")
    init = entry.get("init", "auto")
    if init not in INITS:
        raise refuse("init", f"must be one of {', '.join(INITS)}")
    bind = entry.get("bind", "127.0.0.1")
    if not isinstance(bind, str) or not re.fullmatch(r"[0-9a-fA-F.:]{2,45}", bind):
        raise refuse("bind", "must be an IP address")
    return Host(
        name=entry["name"],
        host=entry["host"],
        port=port,
        user=entry["user"],
        private_key_file=key_file,
        host_key=entry["host_key"].strip(),
        init=init,
        bind=bind,
    )


def ranked(pool: Iterable[Host], namespace_id: str) -> list[Host]:
    """The pool in placement order for ``namespace_id`` (rendezvous hashing on host names)."""

    def weight(host: Host) -> bytes:
        return hashlib.sha256(f"{host.name}\0{namespace_id}".encode()).digest()

    return sorted(pool, key=weight, reverse=True)
