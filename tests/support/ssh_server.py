"""A real OpenSSH server for the ``ssh`` driver's tests, on a loopback port of this machine.

Debian's ``openssh-server`` is installed with apt-get when ``sshd`` is missing (and
``systemd``'s ``systemd-analyze`` likewise), the way the test services install Docker; where
that cannot happen (no root, no apt-get) the tests skip naming the command, except in CI
(``CI`` set), where they fail. The server gets generated host and user keys, accepts only that
user key for root, and is stopped when the session ends. A host "directory" for one test is a
root under ``/var/tmp`` (the Agents' users must traverse it); ``cleanup`` stops every unit the
driver's supervisor started there, removes the Agents' users and the directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from occ.drivers.compute.ssh import hostside
from tests.support.processes import wait_for

SSHD = "/usr/sbin/sshd"
PACKAGES = {SSHD: "openssh-server", "/usr/bin/systemd-analyze": "systemd"}


def require_tools() -> None:
    """Install what is missing; skip (fail in CI) when it cannot be installed."""
    missing = sorted({package for path, package in PACKAGES.items() if not Path(path).exists()})
    if not missing:
        return
    apt_get = shutil.which("apt-get")
    command = f"apt-get install -y {' '.join(missing)}"
    if apt_get is None or os.geteuid() != 0:
        _unavailable(f"the ssh driver's tests need {', '.join(missing)}: run {command}")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for arguments in (["update", "-qq"], ["install", "-y", "-qq", *missing]):
        done = subprocess.run(
            [apt_get, *arguments], env=environment, capture_output=True, timeout=600, check=False
        )
        if done.returncode != 0:
            _unavailable(f"{command} failed: {done.stderr.decode()[-300:]}")


def _unavailable(message: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@dataclass(frozen=True)
class Server:
    """A running sshd: where it listens and what a pool entry needs to reach it."""

    port: int
    private_key_file: Path
    host_key: str
    process: subprocess.Popen[bytes]

    def pool_entry(self, name: str = "host-a", **overrides: Any) -> dict[str, Any]:
        return {
            "name": name,
            "host": "127.0.0.1",
            "port": self.port,
            "user": "root",
            "private_key_file": str(self.private_key_file),
            "host_key": self.host_key,
            "init": "supervisor",
            **overrides,
        }


@contextlib.contextmanager
def running(directory: Path) -> Iterator[Server]:
    """Start sshd with fresh keys under ``directory``; stop it afterwards."""
    require_tools()
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("host", "user"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(directory / name)],
            check=True,
        )
    shutil.copy(directory / "user.pub", directory / "authorized_keys")
    port = _free_port()
    config = directory / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {directory / 'host'}",
                f"AuthorizedKeysFile {directory / 'authorized_keys'}",
                f"PidFile {directory / 'sshd.pid'}",
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "AllowTcpForwarding yes",
                "LogLevel ERROR",
                "",
            ]
        )
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    log = open(directory / "sshd.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_for(lambda: _answers(port) or process.poll() is not None, timeout=20,
                 message="sshd to listen")  # fmt: skip
        if process.poll() is not None:
            pytest.fail(f"sshd exited: {(directory / 'sshd.log').read_text()[-1000:]}")
        host_key = " ".join((directory / "host.pub").read_text().split()[:2])
        yield Server(port, directory / "user", host_key, process)
    finally:
        process.terminate()
        process.wait(10)
        log.close()


def new_root() -> Path:
    """A fresh host root the Agents' users can traverse (``/var/tmp``, mode 0755)."""
    root = Path(tempfile.gettempdir() if not Path("/var/tmp").is_dir() else "/var/tmp")
    path = root / f"occ-ssh-{uuid.uuid4().hex[:10]}"
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    return path


def cleanup(root: Path) -> None:
    """Stop every unit supervised under ``root``, remove the Agents' users, then ``root``."""
    for pid_file in root.glob("run/*.pid"):
        with contextlib.suppress(ValueError, IndexError):
            pid = int(pid_file.read_text().split()[0])
            for kill in (os.killpg, os.kill):  # its group, and the unit should it lead none
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    kill(pid, signal.SIGKILL)
    for agent in root.glob("namespaces/*/agents/*"):
        subprocess.run(
            ["userdel", hostside.user_name(agent.name)], capture_output=True, check=False
        )
    shutil.rmtree(root, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False
