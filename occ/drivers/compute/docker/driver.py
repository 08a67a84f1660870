"""The ``docker`` Compute Driver: Namespaces as bridge networks, revisions as gateway containers.

Per Namespace one user-defined bridge network (``occ-ns-<hash>``); per revision one gateway
container (``occ-gw-<hash>``) on it, with a read-only snapshot volume; the Agent's network
alias sits on the active revision's container, and the Agent's endpoint is that container's
port published on 127.0.0.1, read from the engine on every pass (it changes when the engine
or the container restarts). Nothing is remembered between calls: every pass finds its objects
by their names and verifies their labels (``naming``), so a new driver instance, another
worker or a repeated pass finds exactly what the last one made, and repairs what went
missing. Objects with occ's names that occ does not own are refused, never adopted.

The harness credential reaches the container only through its stdin, written once after each
start (``workload``); it is never in the create arguments, so ``docker inspect``, labels,
environment and logs never show it. Development only: engine and workers share a machine.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, ParamSpec, TypeVar

from occ.drivers.compute import base, standin
from occ.drivers.compute import hooks as lifecycle
from occ.drivers.compute.docker import engine as docker_engine
from occ.drivers.compute.docker import health, naming, observation, owned, snapshots, workload
from occ.settings.config import Settings

MIN_API_VERSION: Final = (1, 40)
"""Oldest Engine API the driver's create arguments are valid for (Docker 19.03)."""

IMAGE_MISSING: Final = snapshots.IMAGE_MISSING
NOT_OWNED: Final = snapshots.NOT_OWNED
NETWORK_IN_USE: Final = "DOCKER_NETWORK_IN_USE"
NOT_READY: Final = observation.NOT_READY
GONE: Final = observation.GONE
"""An observed revision has no gateway container."""
UNHEALTHY: Final = "RUNTIME_STARTUP_FAILED"
"""A started gateway's health check failed: the deployment fails (the engine judged it)."""
CHANGED: Final = "DOCKER_OBJECT_CHANGED"
"""Transient: an object changed or vanished between two engine calls (a retry re-reads)."""

P = ParamSpec("P")
R = TypeVar("R")


def _classified(method: Callable[P, R]) -> Callable[P, R]:
    """A contract method whose engine surprises (an object gone, renamed or busy between two
    calls) end as ``TransientDriverError``: every driver error is classified."""

    @functools.wraps(method)
    def classified(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except (docker_engine.NotFound, docker_engine.Conflict, docker_engine.Forbidden) as exc:
            raise base.TransientDriverError(CHANGED, str(exc)[:300]) from None

    return classified


MAINTENANCE_INTERVAL_MS: Final = 30_000
"""How often active revisions are observed by default (container running and healthy)."""


class DockerComputeDriver:
    """Namespaces are bridge networks; Agent revisions are hardened gateway containers."""

    name = "docker"
    capabilities: base.Capabilities

    def __init__(
        self,
        engine: docker_engine.Engine,
        *,
        image: str,
        limits: workload.Limits,
        hooks: lifecycle.HookDispatcher | None = None,
        readiness_wait_s: float = 3.0,
        probe_timeout_s: float = 0.5,
        stop_timeout_s: int = 10,
        maintenance_interval_s: float | None = None,
        health_check: health.HealthCheck = health.DEFAULT,
    ) -> None:
        """``readiness_wait_s``: how long one pass waits for a started gateway to answer;
        ``maintenance_interval_s`` enables the maintenance chain (re-observation);
        ``health_check``: the timing of the engine's health check of every gateway."""
        self.capabilities = base.after_commit(maintenance_interval_s)
        self.engine = engine
        self.image = image
        self.limits = limits
        self.hooks = hooks if hooks is not None else lifecycle.HookDispatcher()
        self.readiness_wait_s = readiness_wait_s
        self.probe_timeout_s = probe_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.health_check = health_check

    @classmethod
    def from_settings(
        cls, settings: Settings, *, hooks: lifecycle.HookDispatcher | None = None
    ) -> DockerComputeDriver:
        return cls(
            docker_engine.Engine(
                settings.docker_host, timeout_s=settings.docker_request_timeout_ms / 1000
            ),
            image=settings.docker_gateway_image,
            hooks=hooks,
            limits=workload.Limits(
                memory_bytes=settings.docker_memory_bytes,
                nano_cpus=settings.docker_nano_cpus,
                pids=settings.docker_pids_limit,
                log_max_bytes=settings.log_file_max_bytes,
                log_files=settings.log_file_backups + 1,
            ),
            maintenance_interval_s=(settings.maintenance_interval_ms or MAINTENANCE_INTERVAL_MS)
            / 1000,
        )

    def revision_capabilities(self, revision: base.RevisionSpec) -> base.Capabilities:
        return self.capabilities

    # -- contract: the engine and Namespaces ---------------------------------------------

    @_classified
    def preflight(self) -> None:
        """The engine answers ``/_ping``, speaks a recent enough API, and has the image."""
        self.engine.ping()
        version = str(self.engine.version().get("ApiVersion", "0"))
        if docker_engine.version_tuple(version) < MIN_API_VERSION:
            raise base.PermanentDriverError(
                "DOCKER_ENGINE_TOO_OLD", f"engine API {version}; at least 1.40 is needed"
            )
        if self.engine.image(self.image) is None:
            raise base.PermanentDriverError(
                IMAGE_MISSING,
                f"the gateway image {self.image!r} is not on the engine: build it with "
                "scripts/build-standin-image.sh, or name another in OCC_DOCKER_GATEWAY_IMAGE",
            )

    @_classified
    def ensure_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        operation.check()
        network = self._ensure_network(namespace.id)
        self.hooks.after_namespace_prepared(operation, namespace)
        return base.Ready({"network": network["Name"]})

    @_classified
    def delete_namespace(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> base.Observation:
        """Remove the Namespace's containers and volumes, then its network.

        A network that still has endpoints afterwards has containers occ does not own on
        it: a permanent error naming them (occ does not disconnect what it did not start).
        """
        operation.check()
        network = owned.network(self.engine, namespace.id, create=False, refuse_foreign=False)
        if network is not None:
            self.hooks.before_namespace_delete(operation, namespace)
        self._remove_labelled(operation, naming.owned(namespace.id))
        if network is not None:
            operation.check()
            try:
                self.engine.remove_network(network["Id"])
            except docker_engine.Forbidden:
                attached = self.engine.network(network["Id"]).get("Containers") or {}
                names = sorted(str(entry.get("Name", "?")) for entry in attached.values())
                raise base.PermanentDriverError(
                    NETWORK_IN_USE,
                    f"network {network['Name']} has endpoints of containers occ does not own: "
                    + (", ".join(names) or "unknown"),
                ) from None
        return base.Ready()

    # -- contract: revisions --------------------------------------------------------------

    @_classified
    def prepare_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Observation:
        """Create (or find) and start the gateway; ``Ready({"endpoint"}, warnings)`` once the
        engine's health check passed and its ``/healthz`` answers for this revision,
        ``Pending`` before that, ``Failed`` when the health check failed."""
        return self._converge(operation, revision)

    @_classified
    def activate_revision(
        self, operation: base.Operation, revision: base.RevisionSpec
    ) -> base.Activation | base.Pending | base.Failed:
        """Move the Agent's network alias to this revision's container; its endpoint.

        ``Pending`` while the gateway is not ready (it is restarted if it exited)."""
        observation = self._converge(operation, revision)
        if not isinstance(observation, base.Ready):
            return observation
        network = owned.network(self.engine, revision.namespace_id, create=False)
        container = owned.gateway(self.engine, revision.revision_id, revision.namespace_id)
        if network is None or container is None:
            return base.Pending(NOT_READY)  # removed meanwhile: the next pass recreates it
        alias = naming.agent_alias(revision.agent_id)
        own_aliases = [naming.revision_alias(revision.revision_id)]
        if alias not in _aliases(container, network["Name"]):
            operation.check()
            self.engine.disconnect(network["Id"], container["Id"])
            self.engine.connect(network["Id"], container["Id"], [*own_aliases, alias])
        for other in self._agent_objects(revision.namespace_id, revision.agent_id, naming.GATEWAY):
            if other["Id"] != container["Id"]:
                found = self.engine.container(other["Id"])
                if alias in _aliases(found, network["Name"]):
                    operation.check()
                    other_alias = naming.revision_alias(
                        found["Config"]["Labels"][naming.REVISION_ID]
                    )
                    self.engine.disconnect(network["Id"], found["Id"])
                    self.engine.connect(network["Id"], found["Id"], [other_alias])
        port = workload.published_port(self.engine.container(container["Id"]))
        if port is None:
            return base.Pending(NOT_READY)
        return base.Activation(standin.endpoint(port))

    @_classified
    def stop_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """``before_workload_stop`` hooks, then stop the container (kept, with its volume)."""
        operation.check()
        container = owned.gateway(
            self.engine, revision.revision_id, revision.namespace_id, refuse_foreign=False
        )
        if container is None:
            return
        self.hooks.before_workload_stop(operation, revision)
        operation.check()
        self.engine.stop(container["Id"], timeout_s=self.stop_timeout_s)

    @_classified
    def retire_revision(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """``before_workload_stop`` hooks, then remove the container and its snapshot."""
        operation.check()
        container = owned.gateway(
            self.engine, revision.revision_id, revision.namespace_id, refuse_foreign=False
        )
        if container is not None:
            self.hooks.before_workload_stop(operation, revision)
            operation.check()
            self.engine.remove_container(container["Id"])
        snapshots.remove(self.engine, operation, revision.namespace_id, revision.revision_id)

    @_classified
    def delete_agent_credentials(
        self, operation: base.Operation, namespace_id: str, agent_id: str
    ) -> None:
        """Remove every container and volume of the Agent (also of never-retired revisions)."""
        self._remove_labelled(operation, {**naming.owned(namespace_id), naming.AGENT_ID: agent_id})

    @_classified
    def observe_revisions(
        self, revisions: Sequence[base.RevisionSpec]
    ) -> Mapping[str, base.Observed]:
        """One container listing for the whole fleet, judged as a deploy pass judges a
        container (``observation``): a revision is healthy while its gateway container runs
        and its health check (when it has one) passed; ``starting`` while the check has neither
        passed nor failed since a start; its endpoint is the published port."""
        labels = {naming.MANAGED: "true", naming.DRIVER: self.name, naming.ROLE: naming.GATEWAY}
        listed = {
            (container.get("Labels") or {}).get(naming.REVISION_ID): container
            for container in self.engine.containers(naming.selector(labels))
        }
        observed: dict[str, base.Observed] = {}
        for revision in revisions:
            container = listed.get(revision.revision_id)
            observed[revision.revision_id] = observation.observed(container, self.engine.container)
        return observed

    # -- helpers for tests and tools ------------------------------------------------------

    def agent_containers(self, namespace_id: str, agent_id: str) -> list[dict[str, Any]]:
        """Every gateway container of the Agent (engine list entries)."""
        return self._agent_objects(namespace_id, agent_id, naming.GATEWAY)

    # -- internals ------------------------------------------------------------------------

    def _converge(self, operation: base.Operation, revision: base.RevisionSpec) -> base.Observation:
        operation.check()
        network = self._ensure_network(revision.namespace_id)  # repairs a removed one
        container = owned.gateway(self.engine, revision.revision_id, revision.namespace_id)
        if container is None:
            container = self._create_gateway(operation, revision, network["Name"])
        state = container.get("State") or {}
        if state.get("Paused"):
            self.engine.unpause(container["Id"])
        elif state.get("Restarting"):
            return base.Pending("REVISION_INCOMPLETE")
        elif not state.get("Running"):
            stdin = None
            if container["Config"]["Labels"].get(naming.CREDENTIAL_CHANNEL) == "stdin":
                if revision.credential is None:
                    return base.Pending("CREDENTIAL_REQUIRED")  # a deploy pass delivers it
                stdin = workload.credential_line(revision.credential)
            operation.check()
            try:
                self.engine.start(container["Id"], stdin=stdin)
            except docker_engine.NotFound:
                # its network was removed and made again: the container is disposable
                self.engine.remove_container(container["Id"])
                return base.Pending("REVISION_INCOMPLETE")
        deadline = time.monotonic() + self.readiness_wait_s
        while True:
            found = self.engine.container(container["Id"])
            port = workload.published_port(found)
            state = health.state_of(found)
            if state == health.State.UNHEALTHY:
                return base.Failed(
                    UNHEALTHY, permanent=True, reason="the gateway's health check failed"
                )
            if state == health.State.PROBE and port is not None:
                warnings = self._status(found, port, revision.revision_id)
                if warnings is not None:
                    return base.Ready({"endpoint": standin.endpoint(port)}, warnings)
            if state == health.State.EXITED or time.monotonic() >= deadline:
                return base.Pending("REVISION_INCOMPLETE")  # an exited one restarts next pass
            operation.wait(0.05)

    def _status(
        self, inspected: Mapping[str, Any], port: int, revision_id: str
    ) -> tuple[base.StartupWarning, ...] | None:
        """The gateway's startup warnings once it answers for this revision: as its health
        check reported them to the engine (so a worker in a container of its own, which cannot
        reach the host's loopback, sees them too), else asked on the published port (a
        container whose check prints nothing)."""
        document = health.reported(inspected)
        if document is not None:
            return standin.status_in(document, revision_id)
        return standin.status_of(port, revision_id, timeout_s=self.probe_timeout_s)

    def _create_gateway(
        self, operation: base.Operation, revision: base.RevisionSpec, network: str
    ) -> dict[str, Any]:
        snapshots.write(self.engine, operation, revision, image=self.image)
        environment = self.hooks.before_workload_start(operation, revision)
        config = workload.gateway_config(
            revision,
            image=self.image,
            network=network,
            limits=self.limits,
            environment=environment,
            with_credential=revision.credential is not None,
            healthcheck=self.health_check.engine_config(),
        )
        try:
            operation.check()
            container_id = self.engine.create_container(**config)
        except docker_engine.Conflict:
            found = owned.gateway(self.engine, revision.revision_id, revision.namespace_id)
            if found is None:
                raise base.TransientDriverError(NOT_READY, "the gateway name is busy") from None
            return found
        except docker_engine.NotFound:
            self.hooks.compensate_workload_start(operation, revision)
            raise base.PermanentDriverError(
                IMAGE_MISSING, f"the gateway image {self.image!r} is not on the engine"
            ) from None
        except BaseException:
            self.hooks.compensate_workload_start(operation, revision)
            raise
        return self.engine.container(container_id)

    def _remove_labelled(self, operation: base.Operation, labels: Mapping[str, str]) -> None:
        """Remove every container, then every volume, that carries all of ``labels``."""
        selector = naming.selector(labels)
        for container in self.engine.containers(selector):
            operation.check()
            self.engine.remove_container(container["Id"])
        for volume in self.engine.volumes(selector):
            operation.check()
            self.engine.remove_volume(volume["Name"])

    def _ensure_network(self, namespace_id: str) -> dict[str, Any]:
        network = owned.network(self.engine, namespace_id, create=True)
        if network is None:
            raise base.TransientDriverError(NOT_READY, "the Namespace's network did not appear")
        return network

    def _agent_objects(self, namespace_id: str, agent_id: str, role: str) -> list[dict[str, Any]]:
        labels = {**naming.owned(namespace_id), naming.AGENT_ID: agent_id, naming.ROLE: role}
        return self.engine.containers(naming.selector(labels))


def _aliases(container: Mapping[str, Any], network: str) -> list[str]:
    networks = (container.get("NetworkSettings") or {}).get("Networks") or {}
    return list((networks.get(network) or {}).get("Aliases") or [])
