"""The child processes of ``occ dev`` as one fleet: spawn, supervise with restarts, ordered stop.

A ``ChildSpec`` says how to run one child; the ``Fleet`` starts them, and ``supervise()`` (called
in occ dev's loop) notices a child that exited, sends what is left of its process group SIGTERM,
and starts it again after the backoff of ``occ.dev.restarts`` (logged ``dev.child-restarted``).
A child that fails its start-up checks too often in a row raises ``GaveUp``. ``stop()`` stops
the fleet in stages and kills what outlives the deadline. The fleet knows no child by name: the
commands and the stop order come from ``occ.dev.children``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from occ.dev import errors, logs, processes, restarts, terminal
from occ.telemetry import observability

logger = logging.getLogger("occ.dev")

LEFTOVER_GRACE_S: Final = 10.0
"""How long what is left of an exited child's group has to stop before it is killed."""


@dataclass(frozen=True)
class ChildSpec:
    """How to run one child of the fleet."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path | None = None
    pass_fds: tuple[int, ...] = ()
    startup_failure_statuses: frozenset[int] = frozenset()
    """Exit statuses meaning "my start-up checks failed" (counted towards giving up)."""
    marker: Path | None = None
    """The child's readiness marker, removed before each start so a stale one never counts."""


@dataclass(frozen=True)
class StopStage:
    """One step of an ordered stop: ``before()``, SIGTERM to ``terminate``, wait for
    ``wait_for`` (until the stage's deadline) before the next stage."""

    terminate: tuple[str, ...]
    wait_for: tuple[str, ...] = ()
    before: Callable[[], None] | None = None


class GaveUp(errors.DevError):
    """A child failed its start-up checks too many times in a row."""


@dataclass
class _Slot:
    spec: ChildSpec
    log: logs.RotatingLog
    process: processes.ChildProcess | None = None
    started_at: float = 0.0
    history: restarts.History = field(default_factory=restarts.History)
    restart_at: float | None = None
    leftovers_until: float = 0.0
    last_status: int = 0
    restarts: int = 0


class Fleet:
    """The children named by ``specs``, each with its log in ``logs_dir/<name>.log``."""

    def __init__(
        self,
        specs: Sequence[ChildSpec],
        logs_dir: Path,
        *,
        policy: restarts.RestartPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        log_limits: logs.Limits = logs.DEFAULT_LIMITS,
    ) -> None:
        names = [spec.name for spec in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"child names must be unique: {names}")
        self.policy = policy or restarts.RestartPolicy()
        self.clock = clock
        self._slots = {
            spec.name: _Slot(
                spec, logs.RotatingLog.limited(logs_dir / f"{spec.name}.log", log_limits)
            )
            for spec in specs
        }
        self._stopping = False

    # -- start and supervision --------------------------------------------------------------

    def start(self) -> None:
        """Start every child once."""
        for slot in self._slots.values():
            self._spawn(slot)

    def pids(self) -> dict[str, int]:
        """The pid (= process group) of each child started so far, by name."""
        return {
            name: slot.process.pid for name, slot in self._slots.items() if slot.process is not None
        }

    def running(self, name: str) -> bool:
        slot = self._slots.get(name)
        return slot is not None and slot.process is not None and slot.process.poll() is None

    def log_path(self, name: str) -> Path:
        return self._slots[name].log.path

    def supervise(self) -> list[str]:
        """One pass: schedule the restart of children that exited, start those that are due.

        Returns the names started again in this pass; raises ``GaveUp`` (after this pass's
        bookkeeping) when a child failed its start-up checks too many times in a row.
        """
        if self._stopping:
            return []
        restarted = []
        for slot in self._slots.values():
            if slot.restart_at is None:
                self._notice_exit(slot)
            elif self._due(slot):
                self._spawn(slot)
                slot.restart_at = None
                slot.restarts += 1
                restarted.append(slot.spec.name)
                self._log_restart(slot)
        return restarted

    def _notice_exit(self, slot: _Slot) -> None:
        process = slot.process
        status = None if process is None else process.poll()
        if process is None or status is None:
            return
        now = self.clock()
        # a dead main process leaves its pool or worker processes behind: stop them first
        process.terminate_group()
        slot.leftovers_until = now + LEFTOVER_GRACE_S
        slot.last_status = status
        decision = restarts.after_exit(
            self.policy,
            slot.history,
            started_at=slot.started_at,
            exited_at=now,
            startup_failure=status in slot.spec.startup_failure_statuses,
        )
        slot.history = decision.history
        name, log = slot.spec.name, slot.log.path
        if isinstance(decision, restarts.GiveUp):
            raise GaveUp(
                f"the {name} process failed its start-up checks "
                f"{decision.history.startup_failures} times in a row (the last time it "
                f"{processes.describe_exit(status)}); see {log}"
            )
        slot.restart_at = now + decision.delay_s
        terminal.warn(
            f"the {name} process {processes.describe_exit(status)}; restarting it in "
            f"{decision.delay_s:g} s; see {log}"
        )

    def _due(self, slot: _Slot) -> bool:
        now = self.clock()
        if slot.restart_at is None or now < slot.restart_at:
            return False
        process = slot.process
        if process is not None and process.group_alive():
            if now < slot.leftovers_until:
                return False
            logger.warning("%s: killed what was left of its process group", slot.spec.name)
            process.kill_group()
        return True

    def _spawn(self, slot: _Slot) -> None:
        spec = slot.spec
        if spec.marker is not None:
            spec.marker.unlink(missing_ok=True)
        if slot.process is not None:
            slot.process.flush_log(timeout=0.5)
        slot.process = processes.ChildProcess(
            spec.name,
            spec.argv,
            log=slot.log,
            env=spec.env,
            cwd=spec.cwd,
            pass_fds=spec.pass_fds,
        )
        slot.started_at = self.clock()
        logger.info("started %s (pid %s)", spec.name, slot.process.pid)

    def _log_restart(self, slot: _Slot) -> None:
        assert slot.process is not None
        observability.log(
            "dev.child-restarted",
            level=logging.WARNING,
            child=slot.spec.name,
            exitStatus=slot.last_status,
            reason=processes.describe_exit(slot.last_status),
            delayMs=round(self.policy.delay_s(slot.history.failures) * 1000),
            count=slot.restarts,
            pid=slot.process.pid,
        )

    # -- stop -------------------------------------------------------------------------------

    def stop(
        self,
        stages: Sequence[StopStage],
        *,
        timeout_s: float,
        give_up: Callable[[], bool] = lambda: False,
    ) -> bool:
        """Stop in ``stages``, then every other child; False if anything had to be killed.

        Pending restarts are cancelled. Each stage waits at most ``timeout_s`` for its
        ``wait_for``; the rest gets ``timeout_s`` after the last stage; ``give_up()`` (a second
        Ctrl-C) kills at once.
        """
        self._stopping = True
        for slot in self._slots.values():
            slot.restart_at = None
        clean = True
        named: set[str] = set()
        for stage in stages:
            if stage.before is not None:
                stage.before()
            for name in stage.terminate:
                self._terminate(name)
                named.add(name)
            deadline = time.monotonic() + timeout_s
            for name in stage.wait_for:
                clean &= self._wait(name, deadline, give_up)
        for name in self._slots:
            if name not in named:
                self._terminate(name)
        deadline = time.monotonic() + timeout_s
        for name in self._slots:
            clean &= self._wait(name, deadline, give_up)
        for slot in self._slots.values():
            slot.log.close()
        return clean

    def _terminate(self, name: str) -> None:
        slot = self._slots.get(name)
        if slot is not None and slot.process is not None:
            slot.process.terminate()

    def _wait(self, name: str, deadline: float, give_up: Callable[[], bool]) -> bool:
        slot = self._slots.get(name)
        if slot is None or slot.process is None:
            return True
        process = slot.process
        if process.wait_stopped(deadline, give_up=give_up):
            status = process.poll()
            logger.info("%s stopped (%s)", name, processes.describe_exit(status or 0))
            return True
        logger.warning("%s did not stop in time: killed its process group", name)
        return False
