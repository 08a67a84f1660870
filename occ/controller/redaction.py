"""Hiding secret values in runtime log lines before they leave the API.

A gateway may log a secret as it was given, one line of it (a PEM key or a JSON credential
spans lines), or in the forms loggers and clients write strings: JSON-escaped, URL-quoted,
base64. Each form of each hidden value is replaced by ``REDACTED`` wherever it stands in a
line, the longest first. A line the driver cut at its length limit also loses a trailing
start of a form, whose rest was cut off with the line's end. Pure functions only.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Final

REDACTED: Final = "[REDACTED]"
MIN_LENGTH: Final = 4
"""Shorter values, and shorter starts of a value at a cut, are not hunted (they would blank
ordinary words)."""
MIN_PART_LENGTH: Final = 8
"""The shortest line of a multi-line value that is hunted on its own (a JSON credential's
``{`` or ``},`` lines are not secret)."""


def forms(value: str) -> set[str]:
    """The ways ``value`` may appear in a log line, each at least ``MIN_LENGTH`` long."""
    parts = (part.strip() for part in value.splitlines())
    whole = [value, *(part for part in parts if len(part) >= MIN_PART_LENGTH)]
    found = set(whole)
    for text in whole:
        found.add(json.dumps(text)[1:-1])
        found.add(json.dumps(text, ensure_ascii=False)[1:-1])
        found.add(urllib.parse.quote(text, safe=""))
        found.add(urllib.parse.quote_plus(text))
    encoded = value.encode()
    found.add(base64.b64encode(encoded).decode())
    found.add(base64.urlsafe_b64encode(encoded).decode().rstrip("="))
    return {form for form in found if len(form) >= MIN_LENGTH}


class Redactor:
    """Redacts the forms of ``hidden`` in lines that a reader cut at ``cut_at`` characters."""

    def __init__(self, hidden: Iterable[str], *, cut_at: int) -> None:
        every = {form for value in hidden if len(value) >= MIN_LENGTH for form in forms(value)}
        self._forms = sorted(every, key=len, reverse=True)
        self._cut_at = cut_at

    def __call__(self, line: str) -> str:
        was_cut = len(line) >= self._cut_at
        for form in self._forms:
            if form in line:
                line = line.replace(form, REDACTED)
        return self._without_cut_start(line) if was_cut else line

    def lines(self, lines: Iterable[str]) -> Iterator[str]:
        """Each of ``lines``, redacted."""
        return map(self, lines)

    def _without_cut_start(self, line: str) -> str:
        for form in self._forms:
            for length in range(len(form) - 1, MIN_LENGTH - 1, -1):
                if line.endswith(form[:length]):
                    return line[:-length] + REDACTED
        return line
