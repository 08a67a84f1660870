"""The ``docker`` Compute Driver (development only): gateway containers on a Docker Engine.

``driver`` holds the contract's implementation, ``engine`` the only use of the ``docker``
SDK, ``naming`` the names and labels of owned objects, ``workload`` the gateway container's
hardened definition, ``snapshots`` the read-only configuration volume. The core must not
import this package: it is loaded by name.
"""

from __future__ import annotations

from occ.drivers.compute.docker.driver import DockerComputeDriver

__all__ = ["DockerComputeDriver"]
