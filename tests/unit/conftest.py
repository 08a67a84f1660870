"""Fixtures of the unit tests: the command lines the CLI would exec, recorded instead."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def exec_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argument lists of every ``os.execv`` (each ends the CLI command at once), in a
    development environment."""
    calls: list[list[str]] = []

    def fake_execv(path: str, argv: list[str]) -> None:
        calls.append(list(argv))
        raise SystemExit(0)

    monkeypatch.setattr(os, "execv", fake_execv)
    monkeypatch.setenv("OCC_ENV", "development")
    return calls
