"""Tests of the shared test support code."""
