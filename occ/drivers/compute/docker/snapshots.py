"""A revision's configuration snapshot on the engine: a labelled volume holding
``configuration.json``, which the gateway mounts read-only.

A read-only mount cannot be written, and the engine copies no files into a container that is
not running except through its archive endpoint, so the file is written through a container
that is created for that and never started (the "writer"), then removed. Writing again
rewrites the same content: the snapshot of a revision never changes.
"""

from __future__ import annotations

from typing import Final

from occ.drivers.compute import base
from occ.drivers.compute.docker import engine as docker_engine
from occ.drivers.compute.docker import naming, workload

IMAGE_MISSING: Final = "DOCKER_GATEWAY_IMAGE_MISSING"
NOT_OWNED: Final = "DOCKER_OBJECT_NOT_OWNED"


def write(
    engine: docker_engine.Engine,
    operation: base.Operation,
    revision: base.RevisionSpec,
    *,
    image: str,
) -> None:
    """Create the snapshot volume (or find it, verifying it is occ's) and write the file."""
    labels = naming.of_revision(revision, naming.SNAPSHOT)
    volume = naming.snapshot(revision.revision_id)
    engine.create_volume(volume, labels)  # an existing name is returned as it is
    if not naming.is_owned(engine.volume(volume).get("Labels"), labels):
        raise base.PermanentDriverError(NOT_OWNED, f"volume {volume} is not occ's")
    writer = naming.snapshot_writer(revision.revision_id)
    _remove_owned_container(engine, writer, revision.namespace_id, revision.revision_id)
    operation.check()
    try:
        writer_id = engine.create_container(
            **workload.snapshot_writer_config(revision, image=image)
        )
    except docker_engine.NotFound:
        raise base.PermanentDriverError(
            IMAGE_MISSING, f"the gateway image {image!r} is not on the engine"
        ) from None
    except docker_engine.Conflict:
        raise base.TransientDriverError(
            docker_engine.UNAVAILABLE, "another pass is writing the snapshot"
        ) from None
    try:
        engine.put_archive(
            writer_id,
            workload.CONFIG_DIR,
            workload.snapshot_archive(revision.configuration_document),
        )
    finally:
        engine.remove_container(writer_id)


def remove(
    engine: docker_engine.Engine, operation: base.Operation, namespace_id: str, revision_id: str
) -> None:
    """Remove the revision's writer (if a pass left one) and its snapshot volume."""
    _remove_owned_container(engine, naming.snapshot_writer(revision_id), namespace_id, revision_id)
    volume = naming.snapshot(revision_id)
    try:
        labels = engine.volume(volume).get("Labels")
    except docker_engine.NotFound:
        return
    if naming.is_owned(
        labels, {naming.NAMESPACE_ID: namespace_id, naming.REVISION_ID: revision_id}
    ):
        operation.check()
        engine.remove_volume(volume)


def _remove_owned_container(
    engine: docker_engine.Engine, name: str, namespace_id: str, revision_id: str
) -> None:
    try:
        found = engine.container(name)
    except docker_engine.NotFound:
        return
    expected = {naming.NAMESPACE_ID: namespace_id, naming.REVISION_ID: revision_id}
    if not naming.is_owned((found.get("Config") or {}).get("Labels"), expected):
        raise base.PermanentDriverError(NOT_OWNED, f"container {name} is not occ's")
    engine.remove_container(found["Id"])
