"""The SSH host pool: each entry checked at startup, and stable placement."""

from __future__ import annotations

from typing import Any

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.ssh import hosts

ENTRY: dict[str, Any] = {
    "name": "host-a",
    "host": "10.0.0.5",
    "user": "occ",
    "private_key_file": "/etc/occ/ssh/id_ed25519",
    "host_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE0",
}


def test_a_well_formed_pool_gets_its_defaults() -> None:
    [host] = hosts.parse_pool([ENTRY])
    assert (host.port, host.init, host.bind) == (22, "auto", "127.0.0.1")
    assert "id_ed25519" not in repr(host)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"port": 0}, "ssh_hosts/0/port: must be a TCP port"),
        ({"port": "22"}, "ssh_hosts/0/port: must be a TCP port"),
        ({"private_key_file": "id_ed25519"}, "ssh_hosts/0/private_key_file: must be an absolute"),
        ({"host_key": "AAAA"}, "ssh_hosts/0/host_key: must be one OpenSSH public key line"),
        ({"host_key": None}, "ssh_hosts/0/host_key: required"),
        ({"name": "Host A"}, "ssh_hosts/0/name: must be a lower-case DNS label"),
        ({"init": "upstart"}, "ssh_hosts/0/init: must be one of"),
        ({"password": "hunter2"}, "ssh_hosts/0/password: unknown key"),
    ],
)
def test_a_bad_entry_is_refused_naming_its_key_never_its_value(
    change: dict[str, Any], message: str
) -> None:
    with pytest.raises(base.PermanentDriverError) as raised:
        hosts.parse_pool([{**ENTRY, **change}])
    assert raised.value.code == hosts.SETTINGS_INVALID
    assert raised.value.reason.startswith(message)
    assert "hunter2" not in str(raised.value)


def test_an_empty_pool_and_repeated_names_are_refused() -> None:
    for pool in ([], None, [ENTRY, ENTRY]):
        with pytest.raises(base.PermanentDriverError):
            hosts.parse_pool(pool)


def test_placement_is_stable_and_only_moves_what_a_removed_host_held() -> None:
    pool = hosts.parse_pool([{**ENTRY, "name": f"host-{n}"} for n in range(4)])
    namespaces = [f"ns_{n}" for n in range(200)]
    before = {ns: hosts.ranked(pool, ns)[0].name for ns in namespaces}
    assert before == {ns: hosts.ranked(pool, ns)[0].name for ns in namespaces}
    assert len(set(before.values())) == 4
    smaller = tuple(host for host in pool if host.name != "host-2")
    after = {ns: hosts.ranked(smaller, ns)[0].name for ns in namespaces}
    moved = {ns for ns in namespaces if before[ns] != after[ns]}
    assert moved == {ns for ns in namespaces if before[ns] == "host-2"}
