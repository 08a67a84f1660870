"""Telemetry: the one JSON log format and the Prometheus metrics."""
