"""The runtime-identities IAM hook on a real Compute Driver (local gateways, a real ledger):
an identity issued at launch reaches the gateway, is revoked before it stops, and keeps an
un-emptied Namespace from being deleted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from occ.drivers.compute import base, hooks
from occ.drivers.compute.local import LocalComputeDriver
from occ.drivers.iam import identities
from occ.foundation import ids
from tests.integration.drivers.local import support


def _environment(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")


def test_an_identity_is_issued_at_launch_and_revoked_before_stop(
    root: Path, tmp_path: Path
) -> None:
    owner = identities.RuntimeIdentities(tmp_path / "ledger")
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([owner]))
    namespace = base.NamespaceSpec(id="ns_test", name="team")
    assert isinstance(driver.ensure_namespace(support.operation(), namespace), base.Ready)
    revision = support.revision(ids.new("agent"), credential="sk-live-never-in-a-ledger")
    support.until_ready(driver, revision)

    [record] = owner.records(namespace.id)
    assert record["revisionId"] == revision.revision_id and record["revokedAt"] is None
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    assert pid is not None
    assert f"{identities.ENVIRONMENT_NAME}={record['identity']}".encode() in _environment(pid)
    ledger_text = "".join(p.read_text() for p in (tmp_path / "ledger").rglob("*.json"))
    assert "sk-live-never-in-a-ledger" not in ledger_text

    # an un-emptied tenant is not deleted: the live identity blocks it, the directory stays
    with pytest.raises(base.TransientDriverError) as raised:
        driver.delete_namespace(support.operation(), namespace)
    assert raised.value.code == identities.OUTSTANDING
    assert (root / "namespaces" / namespace.id).exists()

    driver.retire_revision(support.operation(), revision)
    assert not support.running(pid)
    [revoked] = owner.records(namespace.id)
    assert revoked["identity"] == record["identity"] and revoked["revokedAt"] is not None

    assert driver.delete_namespace(support.operation(), namespace) == base.Ready()
    assert owner.records(namespace.id) == []


def test_an_unwritable_ledger_preserves_the_workload_for_retry(root: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    owner = identities.RuntimeIdentities(ledger)
    driver = LocalComputeDriver(root, hooks=hooks.HookDispatcher([owner]))
    revision = support.revision(ids.new("agent"))
    support.until_ready(driver, revision)
    pid = driver.revision_process(revision.agent_id, revision.revision_id)
    assert pid is not None

    record_file = next(ledger.rglob("*.json"))
    kept = record_file.with_suffix(".kept")
    record_file.rename(kept)
    record_file.mkdir()  # the record cannot be read nor replaced (a directory in its place)
    with pytest.raises(base.TransientDriverError) as raised:
        driver.retire_revision(support.operation(), revision)
    assert raised.value.code == identities.LEDGER_UNAVAILABLE
    assert support.running(pid)  # the revocation failed: the workload is kept for the retry
    record_file.rmdir()
    kept.rename(record_file)
    driver.retire_revision(support.operation(), revision)
    assert not support.running(pid)


def test_a_repeated_launch_reuses_the_live_identity(root: Path, tmp_path: Path) -> None:
    owner = identities.RuntimeIdentities(tmp_path / "ledger")
    revision = support.revision(ids.new("agent"))
    launch = hooks.LaunchSpec()
    owner.before_workload_start(support.operation(), revision, launch)
    again = hooks.LaunchSpec()
    owner.before_workload_start(support.operation(), revision, again)
    assert again.environment == launch.environment
    owner.before_workload_stop(support.operation(), revision)
    owner.before_workload_stop(support.operation(), revision)  # idempotent
    after_revocation = hooks.LaunchSpec()
    owner.before_workload_start(support.operation(), revision, after_revocation)
    assert after_revocation.environment != launch.environment  # a new identity, not the revoked
