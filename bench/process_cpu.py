"""The CPU time processes spent, read from Linux's ``/proc`` (for the benchmarks' diagnostics):
one process, a process and its descendants, a group of roles before and after a phase, and
the PostgreSQL backends of one database."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import redis


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process (0 when it is gone or /proc is missing)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def family(pid: int) -> list[int]:
    """``pid`` and its descendants (a worker and its pool processes)."""
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = (entry / "stat").read_text(encoding="utf-8")
                    parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [pid], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found.extend(frontier)
    return found


def runner_groups(broker: redis.Redis) -> dict[str, list[int]]:
    """The roles every phase has: the broker's Redis server (when it says its pid) and this
    benchmark process."""
    groups: dict[str, list[int]] = {}
    with contextlib.suppress(redis.RedisError, KeyError, ValueError):
        groups["redis"] = [int(broker.info("server")["process_id"])]
    groups["bench"] = [os.getpid()]
    return groups


def snapshot(groups: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds so far of each role's processes."""
    return {role: sum(cpu_s(pid) for pid in pids) for role, pids in groups.items()}


def report(before: dict[str, float], after: dict[str, float], count: int, elapsed: float) -> str:
    """CPU ms per item of each role between two snapshots, against what the cores offered."""
    spent = {role: (after[role] - before.get(role, 0.0)) * 1000 / count for role in after}
    capacity = (os.cpu_count() or 1) * elapsed * 1000 / count
    parts = ", ".join(f"{role} {value:.2f}" for role, value in spent.items())
    return f"CPU ms per item: {parts}; total {sum(spent.values()):.2f} of {capacity:.2f} available"


def postgres_cpu_s(database: str) -> float:
    """CPU seconds so far of the PostgreSQL backends connected to ``database`` (a backend's
    command line names its database), so that other work on a shared server is not counted.
    Backends that ended since are not counted either: keep them open across a measurement."""
    total = 0.0
    marker = f" {database} ".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
            if marker not in (entry / "cmdline").read_bytes().replace(b"\0", b" ") + b" ":
                continue
        except OSError:
            continue
        total += cpu_s(int(entry.name))
    return total
