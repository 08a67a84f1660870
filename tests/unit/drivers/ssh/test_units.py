"""The gateway unit: hardened, limited, placeholders as environment, never a credential."""

from __future__ import annotations

from typing import Any

from occ.drivers.compute.ssh import host_supervisor, hostside, units
from occ.foundation import fingerprints
from tests.support import specs

REVISION = specs.revision(agent_id="agt_7", revision_id="rev_9")


def _render(**changes: Any) -> str:
    options: dict[str, Any] = {
        "root": "/var/lib/occ",
        "bind": "127.0.0.1",
        "command": None,
        "environment": {"SANDBOX_PROFILE": "opaque-sandbox:1"},
        "credential": True,
        "limits": units.Limits(),
        **changes,
    }
    return units.render(REVISION, **options)


def test_the_unit_names_its_revision_and_runs_as_the_agents_user() -> None:
    text = _render()
    assert text.splitlines()[0] == "# occ-revision=rev_9"
    assert f"User={hostside.user_name('agt_7')}" in text
    assert hostside.unit_name("agt_7").startswith("occ-agent-")
    service = host_supervisor.parse_unit(text)
    assert service["ExecStart"][0].startswith("/usr/bin/python3 -m occ.drivers.gateway")
    assert "--port @PORT@" in service["ExecStart"][0]
    assert (
        "--credential-file /var/lib/occ/namespaces/ns_1/agents/agt_7/revisions/rev_9/credential"
        in service["ExecStart"][0]
    )
    assert service["Environment"] == [
        '"PYTHONPATH=/var/lib/occ/lib"',
        '"SANDBOX_PROFILE=opaque-sandbox:1"',
    ]


def test_the_unit_is_hardened_and_limited() -> None:
    service = host_supervisor.parse_unit(
        _render(limits=units.Limits(memory_bytes=1 << 28, tasks=64))
    )
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "CapabilityBoundingSet": "",
        "MemoryMax": str(1 << 28),
        "TasksMax": "64",
        "CPUQuota": "50%",
        "LimitNOFILE": "1024",
    }.items():
        assert service[key] == [value], key


def test_a_configured_command_gets_no_library_path() -> None:
    service = host_supervisor.parse_unit(
        _render(command=["/opt/openclaw/bin/gateway"], credential=False)
    )
    assert service["ExecStart"][0].startswith("/opt/openclaw/bin/gateway --host 127.0.0.1")
    assert "--credential-file" not in service["ExecStart"][0]
    assert service["Environment"] == ['"SANDBOX_PROFILE=opaque-sandbox:1"']


def test_the_host_helper_names_the_fingerprint_key_file_as_the_gateway_reads_it() -> None:
    assert hostside.FINGERPRINT_KEY == fingerprints.KEY_FILE
