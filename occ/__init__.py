"""OpenClaw Control Plane: admits agent deployments and reconciles them through compute drivers."""

from __future__ import annotations

__version__ = "0.1.0"
