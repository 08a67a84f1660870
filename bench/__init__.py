"""Benchmarks: scripts that print figures (``name=value`` lines); not tests."""

from __future__ import annotations
