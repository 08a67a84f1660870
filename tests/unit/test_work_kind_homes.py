"""Where a work kind is written down: each kind in at most four modules of ``occ``, and none
in the generic machinery (the queue, the claim, starts, the executor, the registry, the
Celery tasks).

A module "names" a kind where its text holds the kind's value as a word
(``namespace_ready``, a key constructor included) or its ``WorkKind`` member. A statement file
``occ/<package>/sql/<name>.sql`` belongs to the module ``occ/<package>/<name>.py`` that loads
it. Pure: reads the source files, runs nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

from occ.state.work_keys import WorkKind

OCC: Final = Path(__file__).resolve().parents[2] / "occ"
MOST_HOMES: Final = 4
GENERIC: Final = (
    "state/work_queue.py",
    "state/work_claims.py",
    "state/work_rows.py",
    "state/work_reads.py",
    "state/starts.py",
    "reconcile/executor.py",
    "reconcile/context.py",
    "reconcile/settle.py",
    "reconcile/registry.py",
    "tasks",
)
"""Modules (or packages) that must stay generic over kinds."""


def _module_of(path: Path) -> Path:
    """The module a source file belongs to: a statement file to the module that loads it."""
    if path.suffix == ".sql":
        return path.parent.parent / f"{path.stem}.py"
    return path


def _homes(kind: WorkKind) -> set[str]:
    pattern = re.compile(rf"\b{kind.value}\b|\bWorkKind\.{kind.name}\b")
    sources = [*OCC.rglob("*.py"), *OCC.rglob("*.sql")]
    return {
        str(_module_of(path).relative_to(OCC))
        for path in sources
        if pattern.search(path.read_text(encoding="utf-8"))
    }


@pytest.mark.parametrize("kind", list(WorkKind), ids=lambda kind: kind.value)
def test_a_kind_lives_in_a_few_modules_and_never_in_the_generic_ones(kind: WorkKind) -> None:
    homes = _homes(kind)
    assert "state/work_keys.py" in homes  # the pattern finds the declaration itself
    assert len(homes) <= MOST_HOMES, sorted(homes)
    generic = [home for home in homes if home.startswith(GENERIC)]
    assert generic == [], f"{kind.value} is named in generic modules: {generic}"


def test_the_generic_modules_exist() -> None:
    for generic in GENERIC:
        assert (OCC / generic).exists(), generic
