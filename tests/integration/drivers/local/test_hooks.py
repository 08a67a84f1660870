"""Lifecycle hooks through the ``local`` driver: launch placeholders, revocation order,
refused environments and Namespace hooks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from occ.drivers.compute import base, hooks
from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import ids
from tests.integration.drivers.local import support
from tests.support.hook_owners import RecordingOwner

# -- lifecycle hooks -----------------------------------------------------------------------


@dataclass
class RecordingHook:
    name: str
    environment: dict[str, str] = field(default_factory=dict)
    fail_stop: bool = False
    fail_namespace_delete: bool = False
    calls: list[tuple[str, str]] = field(default_factory=list)

    def after_namespace_prepared(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        self.calls.append(("after_namespace_prepared", namespace.id))

    def before_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec, launch: hooks.LaunchSpec
    ) -> None:
        self.calls.append(("before_workload_start", revision.revision_id))
        launch.environment.update(self.environment)

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self.calls.append(("before_workload_stop", revision.revision_id))
        if self.fail_stop:
            raise base.TransientDriverError("REVOCATION_PENDING")

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        self.calls.append(("before_namespace_delete", namespace.id))
        if self.fail_namespace_delete:
            raise base.TransientDriverError("REVOCATION_PENDING")


def test_launch_placeholders_reach_the_gateway_and_stop_revokes_first(root: Path) -> None:
    hook = RecordingHook("sandbox:test", environment={"SANDBOX_TOKEN": "opaque-sbx.token-1"})
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([hook]))
    revision = support.revision(ids.new("agent"))
    support.until_ready(driver, revision)
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert b"SANDBOX_TOKEN=opaque-sbx.token-1" in environment
    assert hook.calls == [("before_workload_start", revision.revision_id)]  # started once
    assert support.runtime(root, revision)["environmentNames"] == ["SANDBOX_TOKEN"]

    hook.fail_stop = True  # revocation fails: the stop is aborted, the gateway keeps running
    with pytest.raises(base.TransientDriverError) as raised:
        driver.retire_revision(support.operation(), revision)
    assert "sandbox:test" in raised.value.reason
    assert pid is not None and support.running(pid)
    assert support.revision_dir(root, revision).exists()

    hook.fail_stop = False
    driver.retire_revision(support.operation(), revision)
    assert not support.running(pid)
    assert hook.calls[-1] == ("before_workload_stop", revision.revision_id)


def test_a_refused_launch_environment_starts_nothing(root: Path) -> None:
    hook = RecordingHook("iam:test", environment={"API_KEY": "sk-live-plaintext"})
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([hook]))
    revision = support.revision(ids.new("agent"))
    with pytest.raises(base.PermanentDriverError) as raised:
        driver.prepare_revision(support.operation(), revision)
    assert raised.value.code == hooks.ENVIRONMENT_INVALID
    assert driver.revision_process(revision.agent_id, revision.revision_id) is None
    assert driver.gateway_processes() == []
    assert hook.calls == [
        ("before_workload_start", revision.revision_id),
        ("before_workload_stop", revision.revision_id),
    ]
    assert "sk-live-plaintext" not in (root / "effects.jsonl").read_text()


def test_namespace_hooks(root: Path) -> None:
    first, second = RecordingHook("configuration:a"), RecordingHook("iam:b")
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([first, second]))
    namespace = base.NamespaceSpec(id=ids.new("namespace"), name="team")
    assert isinstance(driver.ensure_namespace(support.operation(), namespace), base.Ready)
    assert first.calls == second.calls == [("after_namespace_prepared", namespace.id)]

    first.fail_namespace_delete = True  # in reverse: b ran, a failed; the directory stays
    with pytest.raises(base.TransientDriverError):
        driver.delete_namespace(support.operation(), namespace)
    assert (root / "namespaces" / namespace.id).exists()
    assert second.calls[-1] == ("before_namespace_delete", namespace.id)

    first.fail_namespace_delete = False
    assert driver.delete_namespace(support.operation(), namespace) == base.Ready()
    assert not (root / "namespaces" / namespace.id).exists()


@pytest.mark.parametrize("stage", hooks.STAGES)
def test_an_owner_failing_at_each_stage_leaves_what_it_protects(root: Path, stage: str) -> None:
    first = RecordingOwner(name="sandbox:first")
    failing = RecordingOwner(name="iam:failing")
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([first, failing]))
    namespace = base.NamespaceSpec(id=ids.new("namespace"), name="team")
    revision = support.revision(ids.new("agent"), credential="sk-never-an-owners")
    revision = dataclasses.replace(revision, namespace_id=namespace.id)
    if stage != "after_namespace_prepared":
        driver.ensure_namespace(support.operation(), namespace)
    if stage in ("before_workload_stop", "before_namespace_delete"):
        support.until_ready(driver, revision)
    failing.fail[stage] = base.TransientDriverError("OWNER_DOWN")
    calls: dict[str, Callable[[], object]] = {
        "after_namespace_prepared": lambda: driver.ensure_namespace(support.operation(), namespace),
        "before_workload_start": lambda: driver.prepare_revision(support.operation(), revision),
        "before_workload_stop": lambda: driver.retire_revision(support.operation(), revision),
        "before_namespace_delete": lambda: driver.delete_namespace(support.operation(), namespace),
    }
    with pytest.raises(base.TransientDriverError) as raised:
        calls[stage]()
    assert "iam:failing" in raised.value.reason
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    if stage == "after_namespace_prepared":  # the completed owner was compensated
        assert first.stages()[-1] == "before_namespace_delete"
    if stage == "before_workload_start":  # nothing started; the completed owner revoked
        assert pid is None and first.stages()[-1] == "before_workload_stop"
    if stage == "before_workload_stop":  # revocation failed: the gateway is kept
        assert pid is not None and support.running(pid)
        assert "before_workload_stop" not in first.stages()  # reverse order: it comes after
    if stage == "before_namespace_delete":
        assert (root / "namespaces" / namespace.id).exists()
    first.assert_saw_no_secret()
    failing.assert_saw_no_secret()
