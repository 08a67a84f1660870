"""Write the files generated from occ's process table and settings, or check them.

``make generate`` runs it after a change to ``occ/process_table/table.py`` or to a field of
``occ.settings.config.Settings``. The Procfile is generated whole; in the documentation, each
region between ``<!-- BEGIN GENERATED name ...-->`` and ``<!-- END GENERATED name -->`` is
(everything outside the regions is written by hand). ``--check`` writes nothing and exits 1
naming every file that differs from what it would write; the test suite runs it. A file whose
regions are missing or unknown stops it (exit 2).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from occ.process_table import documentation, procfile
from occ.process_table.table import Layout
from occ.settings import reference

ROOT = Path(__file__).resolve().parents[1]
PROCESS_SOURCE = "occ/process_table/table.py"
SETTINGS_SOURCE = "the fields of occ.settings.config.Settings"
_REGION = re.compile(
    r"<!-- BEGIN GENERATED (?P<name>[a-z-]+)\b[^\n]*-->\n.*?<!-- END GENERATED (?P=name) -->\n",
    re.DOTALL,
)
_MARKER = re.compile(r"<!-- (?:BEGIN|END) GENERATED ([a-z-]+)")


class GenerateError(Exception):
    """A target file cannot be generated: a region is missing or unknown."""


@dataclass(frozen=True)
class Region:
    """A generated part of a hand-written file."""

    name: str
    source: str
    render: Callable[[], str]

    def text(self) -> str:
        return (
            f"<!-- BEGIN GENERATED {self.name}: make generate writes it from {self.source} -->\n"
            f"{self.render()}<!-- END GENERATED {self.name} -->\n"
        )


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """``rows`` (the header first) as a Markdown table."""
    header, *body = rows
    lines = [_row(header), "|" + "---|" * len(header), *(_row(row) for row in body)]
    return "\n".join(lines) + "\n"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _commands(layout: Layout) -> Callable[[], str]:
    return lambda: markdown_table(documentation.commands(layout))


REGIONS: dict[str, tuple[Region, ...]] = {
    "README.md": (
        Region("processes", PROCESS_SOURCE, lambda: markdown_table(documentation.processes())),
        Region(
            "configuration",
            SETTINGS_SOURCE,
            lambda: markdown_table(reference.configuration_rows()),
        ),
    ),
    "docs/running.md": (
        Region("dev-children", PROCESS_SOURCE, _commands(Layout.DEV)),
        Region("compose-commands", PROCESS_SOURCE, _commands(Layout.COMPOSE)),
        Region("kubernetes-commands", PROCESS_SOURCE, _commands(Layout.KUBERNETES)),
        Region("procfile", PROCESS_SOURCE, lambda: f"```\n{procfile.text()}```\n"),
    ),
    "docs/operations.md": (
        Region(
            "metrics-directories",
            PROCESS_SOURCE,
            lambda: markdown_table(documentation.metrics_directories()),
        ),
    ),
    "docs/settings.md": (
        Region("settings", SETTINGS_SOURCE, lambda: markdown_table(reference.reference_rows())),
    ),
}
"""The regions of each hand-written file, by its path from the repository's root."""

WHOLE: dict[str, Callable[[], str]] = {"Procfile": procfile.text}
"""The files generated whole."""


def regenerate(path: str, current: str) -> str:
    """``current``, the text of ``path``, with each of its regions written again."""
    regions = {region.name: region for region in REGIONS[path]}
    found = [match.group(1) for match in _MARKER.finditer(current)]
    unknown = sorted(set(found) - set(regions))
    if unknown:
        raise GenerateError(f"{path}: no generated region is called {', '.join(unknown)}")
    written: list[str] = []

    def replace(match: re.Match[str]) -> str:
        written.append(match.group("name"))
        return regions[match.group("name")].text()

    text = _REGION.sub(replace, current)
    for name in regions:
        if written.count(name) != 1 or found.count(name) != 2:
            raise GenerateError(
                f"{path}: the region {name} needs one BEGIN GENERATED {name} line and, after "
                f"it, one END GENERATED {name} line"
            )
    return text


def generated(root: Path) -> dict[str, str]:
    """What every target file under ``root`` should hold."""
    files = {path: render() for path, render in WHOLE.items()}
    for path in REGIONS:
        files[path] = regenerate(path, (root / path).read_text(encoding="utf-8"))
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on drift")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this)")
    options = parser.parse_args(argv)
    try:
        files = generated(options.root)
    except (GenerateError, OSError) as exc:
        print(f"generate: error: {exc}", file=sys.stderr)
        return 2
    stale = []
    for path, text in files.items():
        target = options.root / path
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not options.check:
            target.write_text(text, encoding="utf-8")
    if options.check and stale:
        print(f"generate: out of date (run make generate): {', '.join(stale)}", file=sys.stderr)
        return 1
    for path in stale:
        print(f"generate: wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
