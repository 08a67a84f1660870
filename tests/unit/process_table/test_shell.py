"""Shell words: bare when safe, double-quoted (expansions live) otherwise, refused when a word
would need escaping; what ``sh`` makes of a line is the argv it was written from."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from occ.process_table import shell

ECHO_ARGV = "import json, sys; print(json.dumps(sys.argv[1:]))"


def _argv_seen_by_sh(text: str, env: dict[str, str] | None = None) -> list[str]:
    """The arguments a program gets when ``sh`` runs ``text`` (after the program's words)."""
    result = subprocess.run(
        ["sh", "-c", f"{shell.line([sys.executable, '-c', ECHO_ARGV])} {text}"],
        env={"PATH": os.defpath, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
        timeout=20,
    )
    seen = json.loads(result.stdout)
    assert isinstance(seen, list)
    return seen


@pytest.mark.parametrize(
    "text",
    ["occ.control", "control@%h", "0.0.0.0:$PORT", "${DIR:-/tmp/occ}/web", "a=b,c", "--x=1"],
)
def test_safe_words_are_bare(text: str) -> None:
    assert shell.word(text) == text


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("occ.web.app:create_app()", '"occ.web.app:create_app()"'),
        ("--basic-auth=${A:?no credentials}", '"--basic-auth=${A:?no credentials}"'),
        ("<home>/beat-schedule", '"<home>/beat-schedule"'),
        ("", '""'),
    ],
)
def test_other_words_are_double_quoted(text: str, quoted: str) -> None:
    assert shell.word(text) == quoted


@pytest.mark.parametrize("text", ['say "hi"', "back\\slash", "`date`"])
def test_a_word_that_would_need_escaping_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="may not hold"):
        shell.word(text)


def test_sh_passes_the_words_a_line_was_written_from() -> None:
    argv = ["occ.web.app:create_app()", "two words", "plain", "tail f()", ""]
    assert _argv_seen_by_sh(shell.line(argv)) == argv


def test_expansions_stay_live_in_bare_and_quoted_words() -> None:
    line = shell.line(["0.0.0.0:$PORT", "--auth=${AUTH:?missing}", "${DIR:-/base}/web"])
    seen = _argv_seen_by_sh(line, {"PORT": "5000", "AUTH": "u:p w"})
    assert seen == ["0.0.0.0:5000", "--auth=u:p w", "/base/web"]


def test_an_assignment_sets_the_variable_for_the_command_after_it() -> None:
    assignment = shell.assignment("TARGET", "${BASE:-/tmp/base}/web dir")
    result = subprocess.run(
        ["sh", "-c", f"{assignment} sh -c 'printf %s \"$TARGET\"'"],
        env={"PATH": os.defpath},
        capture_output=True,
        text=True,
        check=True,
        timeout=20,
    )
    assert result.stdout == "/tmp/base/web dir"


def test_an_assignment_needs_a_variable_name() -> None:
    with pytest.raises(ValueError, match="not a variable name"):
        shell.assignment("1NAME", "value")
