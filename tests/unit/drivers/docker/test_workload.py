"""The gateway container's definition: hardened, and never carrying the credential."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.docker import health, naming, workload
from tests.support import specs

SECRET = "sk-unit-never-in-config"


def _revision(credential: str | None = SECRET) -> base.RevisionSpec:
    return specs.revision(
        revision_number=3,
        configuration_generation=2,
        configuration_document={"model": "m"},
        credential=None
        if credential is None
        else base.Credential(credential, "test-fingerprint-key"),
    )


def _config(revision: base.RevisionSpec) -> dict[str, object]:
    return workload.gateway_config(
        revision,
        image="img:dev",
        network="occ-ns-x",
        limits=workload.Limits(memory_bytes=1 << 27, nano_cpus=250_000_000, pids=32),
        environment={"HOOK_TOKEN": "opaque-abc"},
        with_credential=revision.credential is not None,
        healthcheck=health.HealthCheck().engine_config(),
    )


def test_the_create_arguments_are_hardened_and_hold_no_credential() -> None:
    config = _config(_revision())
    assert SECRET not in json.dumps(config, default=str)
    host = config["host_config"]
    assert isinstance(host, dict)
    assert host["read_only"] is True and host["privileged"] is False
    assert host["cap_drop"] == ["ALL"] and host["security_opt"] == ["no-new-privileges"]
    assert host["init"] is True
    assert host["port_bindings"] == {workload.PORT: ("127.0.0.1", None)}
    assert (host["mem_limit"], host["memswap_limit"], host["pids_limit"]) == (1 << 27, 1 << 27, 32)
    assert host["log_config"] == {
        "type": "json-file",
        "config": {"max-size": str(10 * 1024 * 1024), "max-file": "3"},
    }
    assert config["user"] == workload.USER
    assert config["stdin_open"] is True
    assert config["environment"] == {"HOOK_TOKEN": "opaque-abc"}
    command = config["command"]
    assert isinstance(command, list)
    assert command[-2:] == ["--credential-stdin", workload.CREDENTIAL_FILE]
    labels = config["labels"]
    assert isinstance(labels, dict)
    assert labels[naming.CREDENTIAL_CHANNEL] == "stdin"
    assert labels[naming.REVISION_NUMBER] == "3"


def test_without_a_credential_nothing_waits_on_stdin() -> None:
    config = _config(_revision(credential=None))
    assert config["stdin_open"] is False
    command = config["command"]
    assert isinstance(command, list)
    assert "--credential-stdin" not in command
    labels = config["labels"]
    assert isinstance(labels, dict) and labels[naming.CREDENTIAL_CHANNEL] == "none"


def test_the_credential_lines_are_the_value_then_its_fingerprint_key() -> None:
    assert workload.credential_line(base.Credential("abc", "k-1")) == b"abc\nk-1\n"
    with pytest.raises(base.PermanentDriverError) as refused:
        workload.credential_line(base.Credential("a\nb", "test-fingerprint-key"))
    assert refused.value.code == "DOCKER_CREDENTIAL_UNDELIVERABLE"
    assert "a\nb" not in str(refused.value)


def test_the_snapshot_archive_holds_the_document_read_only() -> None:
    data = io.BytesIO(workload.snapshot_archive({"b": 1, "a": [2]}))
    with tarfile.open(fileobj=data) as archive:
        [member] = archive.getmembers()
        assert (member.name, member.mode, member.uid) == ("configuration.json", 0o444, 10001)
        extracted = archive.extractfile(member)
        assert extracted is not None and json.loads(extracted.read()) == {"a": [2], "b": 1}


def test_the_published_port_is_read_from_the_inspect_document() -> None:
    inspected = {
        "NetworkSettings": {"Ports": {"8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": "49153"}]}}
    }
    assert workload.published_port(inspected) == 49153
    assert workload.published_port({"NetworkSettings": {"Ports": {"8080/tcp": None}}}) is None
    assert workload.published_port({}) is None


def test_names_are_fixed_per_id_and_labels_decide_ownership() -> None:
    assert naming.network("ns_1") == naming.network("ns_1") != naming.network("ns_2")
    assert naming.network("ns_1").startswith("occ-ns-") and len(naming.network("ns_1")) == 23
    owned = naming.owned("ns_1")
    assert naming.is_owned(owned, owned)
    assert not naming.is_owned({**owned, naming.MANAGED: "false"}, owned)
    assert not naming.is_owned(naming.owned("ns_2"), owned)
    assert not naming.is_owned(None, owned)
