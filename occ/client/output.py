"""How the client prints what the API answered: a table (``wide``: more columns), names,
JSON or YAML (``-o``).

Pure functions from data to text; nothing here talks to the API. JSON is the API's ``data``
exactly (so ``-o json`` parses); a table shows the chosen columns of a list, or one field per
line of an object, with nested values as compact JSON; ``-o name`` prints ``kind/name`` per
item, as kubectl does, for scripts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

FORMATS: Final = ("table", "wide", "name", "json", "yaml")
_KINDS: Final = {
    "ns": "namespace",
    "cfg": "configuration",
    "sec": "secret",
    "agt": "agent",
    "rev": "revision",
}
"""The kind an id's prefix names, for ``-o name`` of an answer printed without its kind."""


def render(
    data: Any,
    form: str,
    columns: Sequence[str] = (),
    *,
    wide: Sequence[str] = (),
    kind: str = "",
) -> str:
    """``data`` as ``form``: a table of a list shows ``columns`` (and ``wide``, more of them,
    for ``wide``); ``name`` is ``kind/name`` (else ``kind/id``) per item."""
    if form == "name":
        items = data if isinstance(data, list) else [data]
        return "\n".join(name_of(item, kind) for item in items)
    if form == "wide":
        form, columns = "table", (*columns, *wide)
    if form == "json":
        return json.dumps(data, indent=2, sort_keys=False)
    if form == "yaml":
        import yaml  # noqa: PLC0415 - only -o yaml pays for it: the CLI starts without it

        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False).rstrip("\n")
    if form != "table":
        raise ValueError(f"unknown output format {form!r}")
    if isinstance(data, list):
        return table(data, columns or _columns_of(data))
    if isinstance(data, dict):
        return fields(data)
    return cell(data)


def name_of(item: Any, kind: str) -> str:
    """``kind/name`` of an item (its id when it has no name), as ``-o name`` prints it; without
    ``kind``, the one its id's prefix names, else the bare name or id."""
    if not isinstance(item, dict):
        return cell(item)
    label = cell(item.get("name") or item.get("id") or item.get("deploymentId"))
    prefix = str(item.get("id") or item.get("deploymentId") or "").split("_", 1)[0]
    kind = kind or _KINDS.get(prefix, "")
    return f"{kind}/{label}" if kind else label


def table(rows: Sequence[Any], columns: Sequence[str]) -> str:
    """Aligned columns with an upper-case header; dotted names reach into nested objects."""
    header = [column.upper().replace(".", "_") for column in columns]
    body = [[cell(lookup(row, column)) for column in columns] for row in rows]
    widths = [max(len(line[index]) for line in [header, *body]) for index in range(len(columns))]
    return "\n".join(
        "  ".join(value.ljust(width) for value, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *body]
    )


def fields(document: dict[str, Any]) -> str:
    """One ``name: value`` line per top-level field."""
    width = max((len(name) for name in document), default=0)
    return "\n".join(f"{name.ljust(width)}  {cell(value)}" for name, value in document.items())


def lookup(row: Any, dotted: str) -> Any:
    """``row["a"]["b"]`` for ``"a.b"``; ``None`` where a step is missing."""
    value = row
    for step in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(step)
    return value


def cell(value: Any) -> str:
    """One value as table text: ``-`` for none, compact JSON for lists and objects."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return " ".join(str(value).split())


def _columns_of(rows: Sequence[Any]) -> list[str]:
    for row in rows:
        if isinstance(row, dict):
            return [name for name, value in row.items() if not isinstance(value, dict | list)]
    return ["value"]
