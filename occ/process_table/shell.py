"""Command lines written as shell text: the Procfile's lines and the scripts run by ``sh -c``.

A word is written bare when it holds only characters the shell takes literally (and ``$``,
``{``, ``}``: expansions such as ``$PORT`` or ``${PROMETHEUS_MULTIPROC_DIR:-/tmp/occ-metrics}``
are meant to stay live), else in double quotes, where ``$`` still expands. A word holding a
double quote, a backslash or a backquote is refused rather than escaped: no command of the
table needs one, and refusing keeps every line readable.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

_BARE: Final = re.compile(r"[A-Za-z0-9_@%+=:,./${}-]+")
_UNQUOTABLE: Final = re.compile(r'["\\`]')
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def word(text: str) -> str:
    """``text`` as one shell word (see the module docstring)."""
    if _BARE.fullmatch(text):
        return text
    if _UNQUOTABLE.search(text):
        raise ValueError(f"a command word may not hold a quote, backslash or backquote: {text}")
    return f'"{text}"'


def line(argv: Iterable[str]) -> str:
    """The command ``argv`` as one shell line."""
    return " ".join(word(arg) for arg in argv)


def assignment(name: str, value: str) -> str:
    """``NAME=value``: a variable set for the command that follows it on its line."""
    if not _ASSIGNMENT.fullmatch(name):
        raise ValueError(f"not a variable name: {name}")
    return f"{name}={word(value)}"
