"""Redaction of runtime log lines: every form a secret takes in a log, and a secret cut with
its line's end."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from occ.controller import redaction

CUT_AT = 64
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
ODD = 'pa"ss\\w\u00f6rd-FAKE-9876'


def _redacted(line: str, *hidden: str) -> str:
    return redaction.Redactor(hidden, cut_at=CUT_AT)(line)


@pytest.mark.parametrize(
    "shown",
    [
        ODD,
        json.dumps(ODD)[1:-1],  # as a JSON logger escapes it
        json.dumps(ODD, ensure_ascii=False)[1:-1],
        urllib.parse.quote(ODD, safe=""),
        urllib.parse.quote_plus(ODD),
        base64.b64encode(ODD.encode()).decode(),
    ],
)
def test_each_form_of_a_secret_is_redacted(shown: str) -> None:
    assert _redacted(f"at {shown} end", ODD) == "at [REDACTED] end"


@pytest.mark.parametrize("line", PEM.splitlines())
def test_each_line_of_a_multi_line_secret_is_redacted(line: str) -> None:
    assert _redacted(f"> {line}", PEM) == "> [REDACTED]"


def test_short_lines_of_a_multi_line_secret_are_not_hunted() -> None:
    document = '{\n  "private_key": "k-FAKE-0123456789"\n}'
    assert _redacted("{ ok }", document) == "{ ok }"
    assert _redacted('"private_key": "k-FAKE-0123456789"', document) == "[REDACTED]"


def test_a_secret_cut_with_its_line_loses_its_start_too() -> None:
    secret = "sk-FAKE-0123456789abcdef"
    line = ("x" * (CUT_AT - 10) + secret)[:CUT_AT]  # the reader cut it inside the secret
    assert _redacted(line, secret) == "x" * (CUT_AT - 10) + "[REDACTED]"
    uncut = line[:-1]  # shorter than the limit: nothing was cut, its end is its own
    assert _redacted(uncut, secret) == uncut
