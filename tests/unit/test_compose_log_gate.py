"""docker-compose.yml's log gate: the API reads gateway logs through it and never holds the
Docker Engine's socket, which only the gate and the workers mount (pure: parses the files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

ROOT: Final = Path(__file__).resolve().parents[2]
ENGINE_SOCKET: Final = "/var/run/docker.sock"
GATE_DIRECTORY: Final = "/run/occ-docker"


def _services() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    return services


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    return {volume.split(":")[1]: volume.split(":")[0] for volume in service.get("volumes", [])}


def test_only_the_gate_and_the_workers_mount_the_engines_socket() -> None:
    holders = {name for name, service in _services().items() if ENGINE_SOCKET in _mounts(service)}
    assert holders == {"docker-log-gate", "control", "worker"}


def test_the_api_reaches_the_gates_socket_through_a_shared_volume() -> None:
    services = _services()
    api, gate = services["api"], services["docker-log-gate"]
    assert _mounts(api)[GATE_DIRECTORY] == _mounts(gate)[GATE_DIRECTORY]
    socket = api["environment"]["OCC_DOCKER_HOST"].removeprefix("unix://")
    command = gate["command"]
    assert command[:3] == ["occ", "docker", "log-gate"]
    assert command[command.index("--socket") + 1] == socket
    assert socket.startswith(f"{GATE_DIRECTORY}/")
    assert command[command.index("--engine") + 1] == ENGINE_SOCKET
    assert "docker-log-gate" in api["depends_on"]


def test_the_gate_holds_no_settings_and_no_secrets() -> None:
    services = _services()
    gate = services["docker-log-gate"]
    assert gate["environment"] == {} and gate["secrets"] == []
    assert gate["image"] == services["api"]["image"] and gate["build"] == services["api"]["build"]


def test_the_image_gives_the_gates_directory_to_its_user() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f"mkdir -p /run/occ {GATE_DIRECTORY} " in dockerfile
    assert f"chown occ:occ /run/occ {GATE_DIRECTORY} " in dockerfile
