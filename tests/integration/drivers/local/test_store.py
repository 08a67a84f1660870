"""The ``local`` driver's tree on disk after a whole lifecycle: modes and contents.

The umask is cleared for the test, so every mode checked is one the driver set itself.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.local import LocalComputeDriver
from occ.foundation import ids
from tests.integration.drivers.local import support


def _modes(root: Path) -> dict[str, int]:
    return {
        str(path.relative_to(root.parent)): stat.S_IMODE(path.lstat().st_mode)
        for path in [root, *sorted(root.rglob("*"))]
    }


@pytest.mark.usefixtures("permissive_umask")
def test_every_file_is_0600_and_every_directory_0700(root: Path) -> None:
    driver = LocalComputeDriver(root)
    driver.preflight()
    namespace = base.NamespaceSpec(id=ids.new("namespace"), name="team")
    driver.ensure_namespace(support.operation(), namespace)
    agent_id = ids.new("agent")
    running = support.revision(agent_id, number=1, credential="sk-modes")
    stopped = support.revision(agent_id, number=2)
    for spec in (running, stopped):
        support.until_ready(driver, spec)
    driver.activate_revision(support.operation(), running)
    driver.stop_revision(support.operation(), stopped)

    modes = _modes(root)
    names = {Path(path).name for path in modes}
    expected = {"effects.jsonl", "namespace.json", "active.json", ".lock", "configuration.json"}
    assert expected | {"runtime.json", "gateway.log", "credential"} <= names
    directories = {path: mode for path, mode in modes.items() if (root.parent / path).is_dir()}
    files = {path: mode for path, mode in modes.items() if path not in directories}
    assert set(directories.values()) == {0o700}, directories
    assert set(files.values()) == {0o600}, files
    assert not [name for name in names if name.endswith(".tmp")]  # no temporary left
    driver.delete_agent_credentials(support.operation(), "ns_test", agent_id)
