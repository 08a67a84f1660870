"""Drivers: pluggable infrastructure behind stable contracts (compute today)."""
