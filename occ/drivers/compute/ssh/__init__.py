"""The ``ssh`` Compute Driver: Agents as hardened systemd units on a pool of SSH hosts."""

from __future__ import annotations

from occ.drivers.compute.ssh.driver import SshComputeDriver

__all__ = ["SshComputeDriver"]
