"""Work kinds and work keys: what a work item is for, and its deterministic id.

A work id names its kind and subject, so a repeated admission finds the item it already made
(enqueue is idempotent on the id). ``WorkKey`` is the only code that formats or parses ids::

    namespace:<namespace id>:reconcile:ready         NAMESPACE_READY
    namespace:<namespace id>:reconcile:deleted       NAMESPACE_DELETED
    agent:<agent id>:reconcile:stopped:<uuid4>       AGENT_STOPPED (one per stop request)
    agent:<agent id>:reconcile:deleted               AGENT_DELETED
    agent_revision:<revision id>:reconcile           REVISION_RECONCILE (the deployment)
    agent_revision:<revision id>:maintenance:<n>     REVISION_MAINTENANCE (bucket n)

The ``controller_work_shape`` CHECK constraint ties the ``kind`` column to the same shapes.
"""

from __future__ import annotations

import enum
import re
import uuid
from dataclasses import dataclass
from typing import Final

from occ.foundation import ids


class WorkKind(enum.StrEnum):
    """What a work item asks the workers to do (the ``kind`` column)."""

    NAMESPACE_READY = "namespace_ready"
    NAMESPACE_DELETED = "namespace_deleted"
    AGENT_STOPPED = "agent_stopped"
    AGENT_DELETED = "agent_deleted"
    REVISION_RECONCILE = "revision_reconcile"
    REVISION_MAINTENANCE = "revision_maintenance"


_UUID4: Final = ids.UUID4_PATTERN
_SHAPES: Final = {
    WorkKind.NAMESPACE_READY: re.compile(rf"namespace:(ns_{_UUID4}):reconcile:ready"),
    WorkKind.NAMESPACE_DELETED: re.compile(rf"namespace:(ns_{_UUID4}):reconcile:deleted"),
    WorkKind.AGENT_STOPPED: re.compile(rf"agent:(agt_{_UUID4}):reconcile:stopped:({_UUID4})"),
    WorkKind.AGENT_DELETED: re.compile(rf"agent:(agt_{_UUID4}):reconcile:deleted"),
    WorkKind.REVISION_RECONCILE: re.compile(rf"agent_revision:(rev_{_UUID4}):reconcile"),
    WorkKind.REVISION_MAINTENANCE: re.compile(
        rf"agent_revision:(rev_{_UUID4}):maintenance:(0|[1-9][0-9]{{0,14}})"
    ),
}
_FORMATS: Final = {
    WorkKind.NAMESPACE_READY: "namespace:{subject}:reconcile:ready",
    WorkKind.NAMESPACE_DELETED: "namespace:{subject}:reconcile:deleted",
    WorkKind.AGENT_STOPPED: "agent:{subject}:reconcile:stopped:{discriminator}",
    WorkKind.AGENT_DELETED: "agent:{subject}:reconcile:deleted",
    WorkKind.REVISION_RECONCILE: "agent_revision:{subject}:reconcile",
    WorkKind.REVISION_MAINTENANCE: "agent_revision:{subject}:maintenance:{discriminator}",
}
"""How ``WorkKey`` writes an id of each kind (``_SHAPES`` reads it back)."""


@dataclass(frozen=True)
class WorkKey:
    """A work item's kind, subject id and (for stops and maintenance) its discriminator."""

    kind: WorkKind
    subject: str
    """The Namespace, Agent or AgentRevision id the item is about."""
    discriminator: str | None = None
    """The stop request's uuid, or the maintenance bucket number."""

    def __str__(self) -> str:
        return _FORMATS[self.kind].format(subject=self.subject, discriminator=self.discriminator)

    @classmethod
    def parse(cls, work_id: str) -> WorkKey:
        """The key of a well-formed work id; ``ValueError`` for anything else (a bucket with
        leading zeros too: one bucket has one id)."""
        for kind, shape in _SHAPES.items():
            match = shape.fullmatch(work_id)
            if match is not None:
                groups = match.groups()
                return cls(kind, groups[0], groups[1] if len(groups) > 1 else None)
        raise ValueError("not a work id")

    @property
    def maintenance_bucket(self) -> int:
        """The bucket number of a maintenance key."""
        if self.kind != WorkKind.REVISION_MAINTENANCE or self.discriminator is None:
            raise ValueError(f"{self} is not a maintenance key")
        return int(self.discriminator)


def namespace_ready(namespace_id: str) -> WorkKey:
    return WorkKey(WorkKind.NAMESPACE_READY, namespace_id)


def namespace_deleted(namespace_id: str) -> WorkKey:
    return WorkKey(WorkKind.NAMESPACE_DELETED, namespace_id)


def agent_stopped(agent_id: str, request: uuid.UUID | None = None) -> WorkKey:
    """A stop key; every stop request gets its own (a fresh uuid unless ``request`` is given)."""
    return WorkKey(WorkKind.AGENT_STOPPED, agent_id, str(request or uuid.uuid4()))


def agent_deleted(agent_id: str) -> WorkKey:
    return WorkKey(WorkKind.AGENT_DELETED, agent_id)


def revision_reconcile(revision_id: str) -> WorkKey:
    """The deployment key of a revision (the deployment id is the revision id)."""
    return WorkKey(WorkKind.REVISION_RECONCILE, revision_id)


def revision_maintenance(revision_id: str, bucket: int) -> WorkKey:
    return WorkKey(WorkKind.REVISION_MAINTENANCE, revision_id, str(bucket))
