"""Metric names in PromQL expressions, and the names occ exports (shared by the rule and
dashboard checks).

No PromQL parser ships offline: ``referenced`` strips what is not a metric name (string
literals, label matchers, range and subquery brackets, ``by``/``on``-style label lists,
Grafana variables, function and aggregation calls, keywords) and keeps the identifiers left.
``exported`` reads the exposition occ's registry renders (with the database's queue gauges).
"""

from __future__ import annotations

import re
from typing import Final

from occ.runtime import gauges
from occ.state.db import Database
from occ.telemetry import metrics

_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_VARIABLE: Final = re.compile(r"\$\{[^}]*\}|\$\w+")
_MATCHERS: Final = re.compile(r"\{[^{}]*\}")
_BRACKETS: Final = re.compile(r"\[[^\[\]]*\]")
_LABEL_LISTS: Final = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE
)
_IDENTIFIER: Final = re.compile(r"(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()")
_KEYWORDS: Final = frozenset(
    {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring"}
    | {"group_left", "group_right", "inf", "nan", "start", "end"}
)


def referenced(expr: str) -> set[str]:
    """The metric names ``expr`` selects."""
    text = _VARIABLE.sub(" 1m ", _STRING.sub(' "" ', expr))
    text = _MATCHERS.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    text = _LABEL_LISTS.sub(" ", text)
    return {
        name
        for name in _IDENTIFIER.findall(text)
        if name.lower() not in _KEYWORDS and not name.startswith("@")
    }


def exported(database: Database) -> set[str]:
    """Every series name occ's exposition can carry (histogram and counter suffixes included)."""
    text = metrics.render(gauges.reader(database, "local"))[0].decode()
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            names |= _series(name, kind)
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


def _series(name: str, kind: str) -> set[str]:
    if kind == "histogram":
        return {f"{name}_{suffix}" for suffix in ("bucket", "count", "sum", "created")}
    if kind == "counter":
        return {name, f"{name.removesuffix('_total')}_created"}
    return {name}
