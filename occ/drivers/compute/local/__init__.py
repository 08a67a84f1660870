"""The ``local`` Compute Driver: infrastructure as directories and processes on this machine.

``LocalComputeDriver`` (``driver``) implements the contract; ``store`` owns the on-disk
layout under ``OCC_LOCAL_ROOT``, ``gateways`` the gateway processes, ``journal`` the
effect journal that fault tests read, and ``logfiles`` the size rotation of the journal and the
gateway logs. This package exports the driver class only.
"""

from __future__ import annotations

from occ.drivers.compute.local.driver import LocalComputeDriver

__all__ = ["LocalComputeDriver"]
