"""The bundle occ installs on SSH hosts: unpacked where occ is not installed, the helper runs
with the modules beside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from occ.drivers.compute.ssh import bundle


def _unpack(root: Path) -> None:
    built = bundle.build()
    subprocess.run(
        ["/bin/sh", "-c", built.install_command(str(root))],
        input=built.encoded,
        text=True,
        check=True,
    )


def _helper(root: Path, verb: str, request: dict[str, object]) -> dict[str, object]:
    completed = subprocess.run(
        # -E -S: no PYTHONPATH and no site-packages, so no installed occ: as on a host
        [sys.executable, "-E", "-S", str(root / bundle.HELPER), verb],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert completed.stderr == ""
    answer: dict[str, object] = json.loads(completed.stdout)
    return answer


def test_the_unpacked_helper_runs_with_its_companions(tmp_path: Path) -> None:
    root = tmp_path / "occ"
    _unpack(root)
    assert (root / bundle.MARKER).read_text() == bundle.build().digest
    agent = root / "namespaces" / "ns_1" / "agents" / "agt_1"
    (agent / "revisions" / "rev_1").mkdir(parents=True)
    answer = _helper(root, "observe", {"root": str(root), "init": "supervisor"})
    assert answer == {
        "ok": True,
        "namespaces": {
            "ns_1": {
                "agents": {
                    "agt_1": {
                        "revisions": ["rev_1"],
                        "credentials": [],
                        "unitRevision": None,
                        "active": False,
                        "port": None,
                        "healthy": False,
                    }
                }
            }
        },
        "systemd": False,
    }


def test_the_bundle_is_the_same_for_the_same_sources() -> None:
    bundle.build.cache_clear()
    first = bundle.build()
    bundle.build.cache_clear()
    assert bundle.build() == first
