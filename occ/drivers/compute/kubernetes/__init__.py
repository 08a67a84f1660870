"""The ``kubernetes`` Compute Driver (``KubernetesComputeDriver``); see ``driver``."""

from __future__ import annotations

from occ.drivers.compute.kubernetes.driver import KubernetesComputeDriver

__all__ = ["KubernetesComputeDriver"]
