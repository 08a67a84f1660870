"""The ``ssh`` driver on a real OpenSSH server: hardened units that systemd accepts, the
credential's one file, retirement of exactly one revision, launch hooks and their
compensation, one observation command per host, and hosts that are down, removed or not the
pinned one.
"""

from __future__ import annotations

import dataclasses
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from occ.drivers.compute import base, hooks
from occ.drivers.compute.ssh import SshComputeDriver, connection, hostside
from occ.drivers.compute.ssh import driver as ssh_driver
from tests.integration.drivers.ssh.conftest import CREDENTIAL, MakeDriver, namespace, revision
from tests.support import gateways, ssh_server
from tests.support.hook_owners import RecordingOwner
from tests.support.processes import wait_for

PLACEHOLDER = {"RUNTIME_IDENTITY": "opaque-identity:ssh-1"}


def _placed(driver: SshComputeDriver, operation: base.Operation) -> base.NamespaceSpec:
    """A new Namespace, ensured on the driver's host."""
    ns = namespace()
    driver.ensure_namespace(operation, ns)
    return ns


def _active(
    driver: SshComputeDriver, operation: base.Operation, spec: base.RevisionSpec
) -> base.Activation:
    assert isinstance(driver.prepare_revision(operation, spec), base.Ready)

    def attempt() -> base.Activation | None:
        answer = driver.activate_revision(operation, spec)
        return answer if isinstance(answer, base.Activation) else None

    activation = wait_for(attempt, timeout=20, message="the gateway to answer")
    assert activation is not None
    return activation


def _unit(root: Path, agent_id: str) -> Path:
    return root / "units" / hostside.unit_name(agent_id)


def _pid(root: Path, agent_id: str) -> int:
    return int((root / "run" / f"{hostside.unit_name(agent_id)[:-8]}.pid").read_text().split()[0])


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}


def test_the_unit_is_hardened_accepted_by_systemd_and_runs_as_the_agents_user(
    make_driver: MakeDriver, root: Path, operation: base.Operation, tmp_path: Path
) -> None:
    owner = RecordingOwner(environment=PLACEHOLDER)
    driver = make_driver(hooks=hooks.HookDispatcher([owner]))
    ns = _placed(driver, operation)
    spec = revision(ns.id)
    activation = _active(driver, operation, spec)
    health = gateways.health(str(activation.endpoint))
    assert health["revisionId"] == spec.revision_id
    assert (
        health["credentialFingerprint"]
        == base.Credential(CREDENTIAL, "test-fingerprint-key").fingerprint
    )

    unit_file = _unit(root, spec.agent_id)
    text = unit_file.read_text()
    for directive in (
        f"User={hostside.user_name(spec.agent_id)}",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "PrivateTmp=yes",
        "MemoryMax=",
        "TasksMax=",
        'Environment="RUNTIME_IDENTITY=opaque-identity:ssh-1"',
    ):
        assert directive in text
    assert CREDENTIAL not in text
    copy = tmp_path / unit_file.name
    shutil.copy(unit_file, copy)
    verified = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, check=False
    )
    assert (verified.returncode, verified.stderr) == (0, ""), verified.stderr

    pid = _pid(root, spec.agent_id)
    status = _status(pid)
    user = pwd.getpwnam(hostside.user_name(spec.agent_id))
    assert status["Uid"].split()[0] == str(user.pw_uid)
    assert status["NoNewPrivs"] == "1"
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert b"RUNTIME_IDENTITY=opaque-identity:ssh-1" in environ
    for exposed in (environ, Path(f"/proc/{pid}/cmdline").read_bytes()):
        assert CREDENTIAL.encode() not in exposed

    credential = root / "namespaces" / ns.id / "agents" / spec.agent_id / "revisions"
    credential = credential / spec.revision_id / "credential"
    stat = credential.stat()
    assert (stat.st_mode & 0o777, stat.st_uid) == (0o600, user.pw_uid)
    assert owner.stages() == ["after_namespace_prepared", "before_workload_start"]
    owner.assert_saw_no_secret()


def test_retirement_removes_exactly_the_revisions_files_and_unit(
    make_driver: MakeDriver, root: Path, operation: base.Operation
) -> None:
    driver = make_driver()
    ns = _placed(driver, operation)
    first = revision(ns.id)
    _active(driver, operation, first)
    second = revision(ns.id, first.agent_id, 2)
    second_endpoint = _active(driver, operation, second).endpoint
    revisions = root / "namespaces" / ns.id / "agents" / first.agent_id / "revisions"

    driver.retire_revision(operation, first)  # the unit runs the second: it stays
    assert sorted(p.name for p in revisions.iterdir()) == [second.revision_id]
    assert gateways.health(str(second_endpoint))["revisionId"] == second.revision_id
    driver.retire_revision(operation, second)
    assert not _unit(root, first.agent_id).exists()
    assert list(revisions.iterdir()) == []
    driver.delete_agent_credentials(operation, ns.id, first.agent_id)
    with pytest.raises(KeyError):
        pwd.getpwnam(hostside.user_name(first.agent_id))


def test_a_failed_activation_compensates_the_launch_hooks(
    make_driver: MakeDriver, operation: base.Operation
) -> None:
    owner = RecordingOwner(environment=PLACEHOLDER)
    driver = make_driver(hooks=hooks.HookDispatcher([owner]))
    ns = _placed(driver, operation)
    spec = revision(ns.id)  # never prepared: the host refuses to activate it
    with pytest.raises(base.TransientDriverError) as raised:
        driver.activate_revision(operation, spec)
    assert raised.value.code == "REVISION_NOT_STAGED"
    assert owner.stages()[-2:] == ["before_workload_start", "before_workload_stop"]


def test_a_failed_revocation_keeps_the_gateway(
    make_driver: MakeDriver, root: Path, operation: base.Operation
) -> None:
    owner = RecordingOwner()
    driver = make_driver(hooks=hooks.HookDispatcher([owner]))
    ns = _placed(driver, operation)
    spec = revision(ns.id)
    endpoint = str(_active(driver, operation, spec).endpoint)
    owner.fail["before_workload_stop"] = base.TransientDriverError("REVOCATION_PENDING")
    with pytest.raises(base.TransientDriverError):
        driver.stop_revision(operation, spec)
    assert gateways.health(endpoint)["revisionId"] == spec.revision_id
    del owner.fail["before_workload_stop"]
    driver.stop_revision(operation, spec)
    assert not (root / "run" / f"{hostside.unit_name(spec.agent_id)[:-8]}.pid").exists()


def test_observation_is_one_command_per_host_for_many_agents(
    make_driver: MakeDriver, operation: base.Operation
) -> None:
    driver = make_driver(observation_ttl_s=30)
    ns = _placed(driver, operation)
    specs = [revision(ns.id) for _ in range(3)]
    for spec in specs:  # nothing staged: each stop only observes
        driver.stop_revision(operation, spec)
    before = driver.connections.commands["host-a"]
    for spec in specs:
        driver.stop_revision(operation, spec)
    assert driver.connections.commands["host-a"] == before  # all answered by one observation
    driver.observation_ttl_s = 0
    driver.stop_revision(operation, specs[0])
    assert driver.connections.commands["host-a"] == before + 1


def test_a_host_that_is_down_defers_the_work(
    make_driver: MakeDriver, ssh_host: ssh_server.Server, operation: base.Operation
) -> None:
    down = ssh_host.pool_entry("host-down", port=1)
    driver = make_driver([down], timeout_s=2)
    with pytest.raises(base.TransientDriverError) as raised:
        driver.ensure_namespace(operation, namespace())
    assert raised.value.code == connection.UNREACHABLE


def test_a_host_removed_from_the_pool_fails_its_agents_work(
    make_driver: MakeDriver, ssh_host: ssh_server.Server, operation: base.Operation
) -> None:
    ns = _placed(make_driver(), operation)
    other_root = ssh_server.new_root()  # another host: another file system
    try:
        driver = make_driver([ssh_host.pool_entry("host-b")], at=other_root)
        with pytest.raises(base.PermanentDriverError) as raised:
            driver.prepare_revision(operation, revision(ns.id))
        assert raised.value.code == ssh_driver.HOST_REMOVED
    finally:
        ssh_server.cleanup(other_root)


def test_a_host_without_its_pinned_key_is_refused(
    make_driver: MakeDriver, ssh_host: ssh_server.Server, operation: base.Operation, root: Path
) -> None:
    other = (ssh_host.private_key_file.parent / "user.pub").read_text().split()[:2]
    driver = make_driver([ssh_host.pool_entry(host_key=" ".join(other))])
    with pytest.raises(base.PermanentDriverError) as raised:
        driver.ensure_namespace(operation, namespace())
    assert raised.value.code == connection.KEY_MISMATCH
    assert list(root.iterdir()) == []  # nothing was sent to a host that is not the pinned one


def test_a_unit_whose_gateway_fails_its_health_check_is_not_observed_healthy(
    make_driver: MakeDriver, operation: base.Operation
) -> None:
    driver = make_driver(observation_ttl_s=0)
    ns = _placed(driver, operation)
    healthy = revision(ns.id)
    sick = dataclasses.replace(
        revision(ns.id), configuration_document={"standIn": {"healthy": False}}
    )
    _active(driver, operation, healthy)
    assert isinstance(driver.prepare_revision(operation, sick), base.Ready)
    # the unit runs the revision (the driver's readiness) but its gateway answers 503
    assert not isinstance(driver.activate_revision(operation, sick), base.Activation)

    observed = driver.observe_revisions([healthy, sick])

    assert observed[healthy.revision_id].healthy
    assert observed[sick.revision_id] == base.Observed(False, code="GATEWAY_UNHEALTHY")
