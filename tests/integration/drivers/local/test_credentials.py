"""Credential delivery by the ``local`` driver: a 0600 file the gateway reads, nowhere else.

The stand-in gateway reports the fingerprint of the credential it read in ``/healthz``,
which proves delivery without the value ever crossing the wire.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import stat
from pathlib import Path

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import fingerprints, ids
from tests.integration.drivers.local import support
from tests.support.processes import wait_for

SECRET = "sk-harness-credential-never-shown"


def _fingerprint(endpoint: str) -> object:
    status, health = support.get(endpoint, "/healthz")
    assert status == 200
    return health["credentialFingerprint"]


def _everything_written(root: Path) -> bytes:
    """Every byte of every file under ``root`` except the credential files themselves."""
    return b"".join(
        path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != "credential"
    )


def test_a_deploy_pass_delivers_the_credential_as_a_0600_file_only(root: Path) -> None:
    driver = LocalComputeDriver(root)
    spec = support.revision(ids.new("agent"), credential=SECRET)
    endpoint = support.until_ready(driver, spec).details["endpoint"]
    driver.activate_revision(support.operation(), spec)

    assert spec.credential is not None
    assert _fingerprint(endpoint) == spec.credential.fingerprint
    credential = support.revision_dir(root, spec) / "credential"
    assert credential.read_text(encoding="utf-8") == SECRET
    assert stat.S_IMODE(credential.stat().st_mode) == 0o600
    # the fingerprint is keyed with the revision's key, delivered beside the credential
    key = support.revision_dir(root, spec) / fingerprints.KEY_FILE
    assert key.read_text(encoding="utf-8") == spec.credential.fingerprint_key
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    unkeyed = hashlib.sha256(f"occ-credential:{SECRET}".encode()).hexdigest()
    assert _fingerprint(endpoint) != unkeyed[: fingerprints.LENGTH]

    pid = driver.revision_process(spec.agent_id, spec.revision_id)
    assert pid is not None
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert os.fsencode(credential) in arguments  # the path, handed over as --credential-file
    assert arguments[arguments.index(os.fsencode(credential)) - 1] == b"--credential-file"
    assert SECRET.encode() not in b"\0".join(arguments)
    assert SECRET.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
    # Not in runtime.json, the journal, the log, the snapshot or any other file.
    assert SECRET.encode() not in _everything_written(root)
    assert (root / "effects.jsonl").exists()
    assert "credential" not in support.runtime(root, spec)["environmentNames"]
    driver.retire_revision(support.operation(), spec)


def test_a_gateway_restarted_without_a_credential_reuses_the_file(root: Path) -> None:
    driver = LocalComputeDriver(root)
    deploy = support.revision(ids.new("agent"), credential=SECRET)
    support.until_ready(driver, deploy)
    first = driver.revision_process(deploy.agent_id, deploy.revision_id)
    assert first is not None
    os.killpg(first, signal.SIGKILL)  # the gateway dies after it was healthy
    wait_for(lambda: not support.running(first), timeout=10, message="the gateway to die")

    # A maintenance pass: the same revision, no credential on this pass.
    maintenance = dataclasses.replace(deploy, credential=None)
    endpoint = support.until_ready(driver, maintenance).details["endpoint"]
    second = driver.revision_process(deploy.agent_id, deploy.revision_id)
    assert second not in (None, first)
    assert deploy.credential is not None
    assert _fingerprint(endpoint) == deploy.credential.fingerprint
    driver.retire_revision(support.operation(), maintenance)


def test_a_gateway_that_never_got_a_credential_reports_none(root: Path) -> None:
    driver = LocalComputeDriver(root)
    spec = support.revision(ids.new("agent"))
    endpoint = support.until_ready(driver, spec).details["endpoint"]
    assert _fingerprint(endpoint) is None
    assert not (support.revision_dir(root, spec) / "credential").exists()
    pid = driver.revision_process(spec.agent_id, spec.revision_id)
    assert b"--credential-file" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    driver.retire_revision(support.operation(), spec)


def test_retirement_and_agent_deletion_remove_the_credential(root: Path) -> None:
    driver = LocalComputeDriver(root)
    agent_id = ids.new("agent")
    retired = support.revision(agent_id, number=1, credential=SECRET)
    kept = support.revision(agent_id, number=2, credential=SECRET + "-2")
    for spec in (retired, kept):
        support.until_ready(driver, spec)
    files = [support.revision_dir(root, spec) / "credential" for spec in (retired, kept)]
    assert all(path.exists() for path in files)

    driver.retire_revision(support.operation(), retired)
    assert not files[0].exists()
    assert files[1].exists()  # the other revision keeps its own
    driver.stop_revision(support.operation(), kept)
    assert files[1].exists()  # a stop keeps every file: a later start needs it
    driver.delete_agent_credentials(support.operation(), "ns_test", agent_id)
    assert not files[1].exists()
    assert not (root / "agents" / agent_id).exists()


def test_a_harness_template_gets_the_credential_file_placeholder(root: Path) -> None:
    template = [*support.GATEWAY_TEMPLATE, "--credential-file", "{credential_file}"]
    driver = LocalComputeDriver(root, harness_commands={"cli": template})
    spec = support.revision(ids.new("agent"), harness="cli", credential=SECRET)
    endpoint = support.until_ready(driver, spec).details["endpoint"]
    assert spec.credential is not None
    assert _fingerprint(endpoint) == spec.credential.fingerprint
    command = support.runtime(root, spec)["command"]
    assert str(support.revision_dir(root, spec) / "credential") in command
    assert SECRET not in " ".join(command)
    driver.retire_revision(support.operation(), spec)


def test_a_template_that_needs_a_credential_fails_without_one_and_starts_nothing(
    root: Path,
) -> None:
    template = [*support.GATEWAY_TEMPLATE, "--credential-file", "{credential_file}"]
    driver = LocalComputeDriver(root, harness_commands={"cli": template})
    spec = support.revision(ids.new("agent"), harness="cli")
    failed = driver.prepare_revision(support.operation(), spec)
    assert isinstance(failed, base.Failed)
    assert (failed.code, failed.permanent) == ("RUNTIME_STARTUP_FAILED", True)
    assert "credential" in failed.reason
    assert driver.gateway_processes() == []
    assert not (support.revision_dir(root, spec) / "runtime.json").exists()


def test_the_configuration_is_served_only_to_the_revisions_own_credential(root: Path) -> None:
    driver = LocalComputeDriver(root)
    document = {"model": "m", "tenant": "private"}
    spec = support.revision(ids.new("agent"), credential=SECRET, document=document)
    endpoint = support.until_ready(driver, spec).details["endpoint"]

    assert support.get(endpoint, "/config") == (401, {"status": "unauthorized"})
    assert support.get(endpoint, "/config", token="not-it")[0] == 401
    assert support.get(endpoint, "/config", token=SECRET) == (200, document)
    driver.retire_revision(support.operation(), spec)
