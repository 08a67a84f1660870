"""Named SQL statements loaded from the ``.sql`` files beside the state package.

A file holds blocks headed ``-- name: <name>`` and a one-line description; each block is one
whole statement a reviewer reads top to bottom. ``load`` parses a file once per process and
returns the statements by name, ready to execute with bound parameters.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from typing import Final

import sqlalchemy as sa

_HEADER: Final = re.compile(r"^-- name: ([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
_COMMENT: Final = re.compile(r"--[^\n]*")


def parse(text: str) -> dict[str, str]:
    """The statements of a file's text by name, without their comments or final semicolon.

    Comments (``--`` to the end of a line; the files keep ``--`` out of string literals) are
    for the reader of the file; they are dropped from what runs so that a ``:name`` in a
    comment is never taken for a parameter.
    """
    headers = list(_HEADER.finditer(text))
    if not headers:
        raise ValueError("no named statement: every statement is headed '-- name: <name>'")
    statements: dict[str, str] = {}
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        block = text[header.end() : following.start() if following else len(text)]
        lines = (_COMMENT.sub("", line).rstrip() for line in block.splitlines())
        body = "\n".join(line for line in lines if line.strip())
        name = header.group(1)
        if name in statements:
            raise ValueError(f"statement {name!r} is defined twice")
        if body.count(";") != 1 or not body.endswith(";") or len(body) < 2:
            raise ValueError(f"statement {name!r} must be one statement ending with ';'")
        statements[name] = body[:-1]
    return statements


@functools.cache
def load(filename: str) -> Mapping[str, sa.TextClause]:
    """The statements of ``occ/state/sql/<filename>``, parsed once."""
    text = resources.files("occ.state").joinpath("sql", filename).read_text(encoding="utf-8")
    return {name: sa.text(body) for name, body in parse(text).items()}
