"""The ``local`` Compute Driver: infrastructure as directories and processes on this machine.

``LocalComputeDriver`` (``driver``) implements the contract; ``store`` owns the on-disk
layout under ``OCC_LOCAL_ROOT``, ``gateways`` the gateway processes, and ``journal`` the
effect journal that fault tests read. This package exports the driver class only.
"""

from __future__ import annotations

from occ.drivers.compute.local.driver import LocalComputeDriver

__all__ = ["LocalComputeDriver"]
