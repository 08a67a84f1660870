"""Resource names: what a name may hold, so that two names that look alike are the same."""

from __future__ import annotations

import pytest

from occ.controller import admission
from occ.foundation import errors


@pytest.mark.parametrize("name", ["team-a", "café", "team a", "équipe\u00a0b", "チーム"])
def test_a_visible_name_is_taken(name: str) -> None:
    assert admission.name(name, ("name",)) == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("a\x00b", "control"),
        ("prod\u200b", "invisible"),  # a zero-width space: looks like "prod"
        ("\ufeff", "invisible"),
        ("\u202egnp.exe", "invisible"),  # a right-to-left override
        ("a\u2028b", "invisible"),  # a line separator
        (" padded", "whitespace"),
    ],
)
def test_a_name_that_hides_what_it_holds_is_refused(name: str, why: str) -> None:
    with pytest.raises(errors.InvalidInput) as refused:
        admission.name(name, ("name",))
    [error] = refused.value.errors
    assert error.pointer == "/name" and why in error.message
