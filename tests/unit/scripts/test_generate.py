"""``scripts/generate.py``: the checked-in Procfile and documentation tables are what the process
table and the settings write; ``--check`` names a file that drifted, a run rewrites it, and a
file whose regions are broken stops the generator."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "generate.py"
TARGETS = ("Procfile", "README.md", "docs/running.md", "docs/operations.md", "docs/settings.md")


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scripts_generate", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


generate = _load()


def _generate(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str]:
    """Run the generator in this process: its exit code and what it printed on stderr."""
    code = generate.main(list(arguments))
    assert isinstance(code, int)
    return code, capsys.readouterr().err


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A root holding a copy of every generated file."""
    for target in TARGETS:
        (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / target, tmp_path / target)
    return tmp_path


def test_the_checked_in_files_are_what_the_generator_writes() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("target", "old", "new"),
    [
        ("Procfile", "-c 4", "-c 8"),
        ("README.md", "| Celery broker |", "| the broker |"),
        ("docs/running.md", "`occ-beat` | 1 |", "`occ-beat` | 2 |"),
        ("docs/settings.md", "`OCC_LOG_LEVEL`", "`OCC_LOGLEVEL`"),
    ],
)
def test_check_names_a_drifted_file_and_a_run_writes_it_back(
    copy: Path, target: str, old: str, new: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy / target
    original = path.read_text()
    assert old in original
    path.write_text(original.replace(old, new, 1))
    code, stderr = _generate(capsys, "--check", "--root", str(copy))
    assert code == 1
    assert f"out of date (run make generate): {target}" in stderr
    assert path.read_text() != original, "--check writes nothing"
    code, stderr = _generate(capsys, "--root", str(copy))
    assert (code, stderr) == (0, f"generate: wrote {target}\n")
    assert path.read_text() == original
    assert _generate(capsys, "--check", "--root", str(copy)) == (0, "")


def test_text_outside_the_regions_is_kept(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = copy / "README.md"
    readme.write_text(readme.read_text() + "\nA paragraph written by hand.\n")
    assert _generate(capsys, "--root", str(copy)) == (0, "")
    assert readme.read_text().endswith("\nA paragraph written by hand.\n")


@pytest.mark.parametrize(
    ("marker", "replacement", "message"),
    [
        ("<!-- END GENERATED processes -->\n", "", "the region processes needs"),
        (
            "<!-- END GENERATED processes -->\n",
            "<!-- END GENERATED processes -->\n<!-- BEGIN GENERATED mystery -->\n",
            "no generated region is called mystery",
        ),
    ],
)
def test_broken_regions_stop_the_generator(
    copy: Path, marker: str, replacement: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = copy / "README.md"
    before = readme.read_text()
    readme.write_text(before.replace(marker, replacement, 1))
    code, stderr = _generate(capsys, "--root", str(copy))
    assert code == 2
    assert f"generate: error: README.md: {message}" in stderr
    assert readme.read_text() == before.replace(marker, replacement, 1), "nothing written"
