"""A private Docker Engine for the tests: install, start, probe, stop and remove one ``dockerd``.

Used by ``scripts/test_services.py`` (the engine every Docker test shares) and by the fault
tests (an engine of their own that they stop and start). Each engine has its own data root,
exec root, socket and pid file under one short directory (unix socket paths are limited to
about 100 bytes), no default bridge, and no iptables rules: published ports on 127.0.0.1 are
served by the engine's userland proxy. It needs root (``dockerd`` does); when ``dockerd`` is
missing, ``install`` gets Debian's ``docker.io`` package with apt-get.

It never touches an engine it did not start (the system's ``/var/run/docker.sock``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import docker.errors
import requests.exceptions

ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = ROOT / "scripts" / "build-standin-image.sh"
MAX_DIRECTORY_LENGTH = 60
"""Longest engine directory: containerd's sockets live some 40 bytes deeper."""


class EngineError(RuntimeError):
    """The engine could not be installed, started or reached."""


def say(message: str) -> None:
    print(f"test-services: {message}", file=sys.stderr, flush=True)


def problem(host: str, timeout_s: float = 3.0) -> str | None:
    """``None`` when the engine at ``host`` answers ``/_ping``; else why not."""
    try:
        client = docker.DockerClient(base_url=host, timeout=timeout_s)
    except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
        return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    try:
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
        return type(exc).__name__
    finally:
        client.close()
    return None


def _stderr_of_failure(command: list[str], *, env: dict[str, str], timeout: float) -> str | None:
    """Run ``command`` (our own or a fixed one); its stderr if it exits non-zero, else None."""
    result = subprocess.run(  # noqa: S603 - fixed arguments or our own script
        command, capture_output=True, text=True, env=env, timeout=timeout, check=False
    )
    return result.stderr if result.returncode != 0 else None


def install() -> None:
    """``apt-get install docker.io`` when there is no ``dockerd`` (about 25 s)."""
    if shutil.which("dockerd"):
        return
    apt_get = shutil.which("apt-get")
    if apt_get is None or os.geteuid() != 0:
        raise EngineError("no dockerd, and apt-get is unavailable or this is not root")
    say("installing docker.io (apt-get)")
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for arguments in (["update", "-qq"], ["install", "-y", "-qq", "docker.io"]):
        failed = _stderr_of_failure([apt_get, *arguments], env=environment, timeout=600)
        if failed is not None:
            raise EngineError(f"apt-get {arguments[0]} failed: {failed.strip()[-300:]}")
    if not shutil.which("dockerd"):
        raise EngineError("docker.io is installed but dockerd is not on PATH")


class PrivateEngine:
    """One ``dockerd`` with everything under ``directory``."""

    def __init__(self, directory: Path, *, address_pool: str = "10.199.0.0/16") -> None:
        if len(str(directory)) > MAX_DIRECTORY_LENGTH:
            raise EngineError(f"engine directory {directory} is too long for unix sockets")
        self.directory = directory
        self.address_pool = address_pool

    @property
    def host(self) -> str:
        return f"unix://{self.directory / 'docker.sock'}"

    @property
    def pid_file(self) -> Path:
        return self.directory / "docker.pid"

    def pid(self) -> int | None:
        """The running ``dockerd``'s pid, if its pid file names a live dockerd."""
        try:
            pid = int(self.pid_file.read_text().strip())
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if b"dockerd" in command and str(self.directory).encode() in command else None

    def running(self) -> bool:
        return self.pid() is not None and problem(self.host, 2.0) is None

    def start(self, timeout_s: float = 30.0) -> None:
        """Start ``dockerd`` (reusing its data root) and wait until it answers."""
        if self.running():
            return
        install()
        self.directory.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "dockerd.log").open("ab")
        command = [
            "dockerd",
            "--data-root",
            str(self.directory / "data"),
            "--exec-root",
            str(self.directory / "exec"),
            "-H",
            self.host,
            "--pidfile",
            str(self.pid_file),
            "--iptables=false",
            "--ip6tables=false",
            "--ip-forward=false",
            "--bridge=none",
            "--storage-driver=overlay2",
            "--default-address-pool",
            f"base={self.address_pool},size=24",
            "--log-level=warn",
        ]
        try:
            process = subprocess.Popen(  # noqa: S603 - fixed arguments
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.directory,
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout_s
        while problem(self.host, 1.0) is not None:
            if process.poll() is not None:
                raise EngineError(f"dockerd exited {process.returncode}: {self._log_tail()}")
            if time.monotonic() > deadline:
                raise EngineError(f"dockerd did not answer within {timeout_s} s")
            time.sleep(0.1)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM ``dockerd`` (it stops its containers) and wait until it is gone."""
        pid = self.pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while Path(f"/proc/{pid}").exists():
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline + 10:
                raise EngineError(f"dockerd {pid} survived SIGKILL")
            time.sleep(0.05)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # our own child (tests): collect it

    def remove(self) -> None:
        """Remove its containers and networks (the kernel keeps a stopped engine's bridges),
        stop it, unmount what it left mounted, and delete the directory."""
        if self.running():
            self._remove_everything()
        self.stop()
        for mount_point in sorted(self._mounts(), key=len, reverse=True):
            subprocess.run(["umount", "-l", mount_point], capture_output=True, check=False)  # noqa: S603, S607
        shutil.rmtree(self.directory, ignore_errors=True)

    def build_image(self) -> None:
        """Build the stand-in gateway image on this engine (nothing to do when current)."""
        self.build_image_on(self.host)

    @staticmethod
    def build_image_on(host: str) -> None:
        """Build the stand-in gateway image on the engine at ``host`` (when not current)."""
        failed = _stderr_of_failure(
            [str(BUILD_SCRIPT)],
            env={**os.environ, "DOCKER_HOST": host, "PYTHON": sys.executable},
            timeout=300,
        )
        if failed is not None:
            raise EngineError(f"building the stand-in image failed: {failed[-500:]}")

    def _remove_everything(self) -> None:
        client = docker.DockerClient(base_url=self.host, timeout=60)
        try:
            for container in client.containers.list(all=True):
                container.remove(force=True)
            for network in client.networks.list():
                if network.name not in ("bridge", "host", "none"):
                    network.remove()
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            say(f"could not empty the engine before stopping it: {exc}")
        finally:
            client.close()

    def _mounts(self) -> list[str]:
        prefix = str(self.directory) + os.sep
        try:
            lines = Path("/proc/self/mountinfo").read_text().splitlines()
        except OSError:
            return []
        return [line.split()[4] for line in lines if line.split()[4].startswith(prefix)]

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return (self.directory / "dockerd.log").read_text(errors="replace")[-500:]
        return ""
