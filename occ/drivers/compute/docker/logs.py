"""The ``docker`` driver's runtime logs: the revision's gateway container output, read-only.

The engine answers the last ``tail`` lines, those since ``since`` and, when following, new
ones until the deadline, when the stream is closed (a timer ends a quiet follow too:
``runtime_logs.streamed``).
"""

from __future__ import annotations

from occ.drivers.compute import runtime_logs
from occ.drivers.compute.docker import engine, naming
from occ.settings.config import Settings


class DockerLogs:
    """Reads gateway container logs through the Docker Engine API."""

    def __init__(self, docker_engine: engine.Engine) -> None:
        self.engine = docker_engine

    @classmethod
    def from_settings(cls, settings: Settings) -> DockerLogs:
        return cls(
            engine.Engine(settings.docker_host, timeout_s=settings.docker_request_timeout_ms / 1000)
        )

    def read_logs(
        self, target: runtime_logs.LogTarget, query: runtime_logs.LogQuery
    ) -> runtime_logs.LogLines:
        try:
            chunks, close = self.engine.logs(
                naming.gateway(target.revision_id),
                tail=query.tail,
                since=None if query.since is None else query.since.timestamp(),
                follow_s=query.follow_s if query.follow else None,
            )
        except engine.NotFound:
            raise runtime_logs.unavailable("the revision's gateway container is gone") from None
        return runtime_logs.streamed(chunks, close, query)
