"""The settings reference, written from ``Settings``: the rows of the documentation's tables.

Everything comes from the fields: the YAML key is the field's name, the variable its declared
``Variable`` (with its ``_FILE`` form and fallback), the type its annotation, the default its
default and the description its docstring. ``configuration_rows`` is the README's short table
(each description's first sentence), ``reference_rows`` the whole reference. Cells are Markdown;
the first row of a table is its header.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic.fields import FieldInfo

from occ.settings import sources
from occ.settings.config import Settings

_RST_LITERAL = re.compile(r"``([^`]+)``")

Rows = tuple[tuple[str, ...], ...]
"""A table: its header, then one row per setting."""


@dataclass(frozen=True)
class Entry:
    """One setting as the documentation shows it."""

    key: str
    variable: sources.Variable | None
    kind: str
    default: str
    description: str

    @property
    def variables(self) -> str:
        if self.variable is None:
            return "none"
        shown = f"`{self.variable.name}`"
        return f"{shown} or `{self.variable.name}_FILE`" if self.variable.file else shown

    @property
    def summary(self) -> str:
        """The description's first sentence, without its full stop."""
        return self.description.split(". ", 1)[0].removesuffix(".")


def entries(settings_cls: type[Settings] = Settings) -> tuple[Entry, ...]:
    """Every setting, in the order of its declaration."""
    declared = sources.variables(settings_cls)
    return tuple(
        _entry(name, field, declared.get(name)) for name, field in settings_cls.model_fields.items()
    )


def configuration_rows(settings_cls: type[Settings] = Settings) -> Rows:
    """The README's table: variable, default and what each setting is for."""
    rows = [
        (
            entry.variables if entry.variable else f"YAML only: `{entry.key}`",
            entry.default,
            entry.summary,
        )
        for entry in sorted(entries(settings_cls), key=lambda entry: entry.variable is None)
    ]
    return (("variable", "default", "meaning"), *rows)


def reference_rows(settings_cls: type[Settings] = Settings) -> Rows:
    """Every setting with its YAML key, variable, type, default and whole description."""
    rows = [
        (f"`{entry.key}`", entry.variables, entry.kind, entry.default, entry.description)
        for entry in entries(settings_cls)
    ]
    return (("YAML key", "variable", "type", "default", "description"), *rows)


def _entry(name: str, field: FieldInfo, variable: sources.Variable | None) -> Entry:
    if not field.description:
        raise ValueError(f"setting {name} has no description (a docstring under its field)")
    default = _shown(field.get_default(call_default_factory=True))
    if variable is not None and variable.fallback is not None:
        default = f"`{variable.fallback}` if set, else {default}"
    if variable is not None and variable.required:
        default = "required"
    return Entry(
        key=name,
        variable=variable,
        kind=_kind(name, field.annotation),
        default=default,
        description=_markdown(field.description),
    )


def _kind(name: str, annotation: Any) -> str:
    """What a value is, as the table says it: a ``X | None`` field is its ``X``."""
    members = [arg for arg in get_args(annotation) if arg is not types.NoneType]
    if get_origin(annotation) is not types.UnionType or len(members) != 1:
        members = [annotation]
    (kind,) = members
    if kind is int:
        return "milliseconds" if name.endswith("_ms") else "integer"
    if kind is str:
        return "text"
    if get_origin(kind) is dict:
        return "mapping"
    if get_origin(kind) is list:
        return "list"
    raise ValueError(f"setting {name}: no documented kind for {annotation}")


def _shown(value: object) -> str:
    return "unset" if value is None else f"`{value}`"


def _markdown(text: str) -> str:
    """A docstring as one Markdown line: RST literals become code spans."""
    return _RST_LITERAL.sub(r"`\1`", " ".join(text.split()))
