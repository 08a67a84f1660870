"""Work kinds and work keys: what a work item is for, and its deterministic id.

Every kind is declared once in ``SPECS``: the format of its id (whose shape, read back by
``WorkKey.parse``, is derived from the format), what the id's subject is, what its
discriminator is, and the target columns operators read. A work id names its kind and subject,
so a repeated admission finds the item it already made (enqueue is idempotent on the id)::

    namespace:<namespace id>:reconcile:ready         NAMESPACE_READY
    namespace:<namespace id>:reconcile:deleted       NAMESPACE_DELETED
    agent:<agent id>:reconcile:stopped:<uuid4>       AGENT_STOPPED (one per stop request)
    agent:<agent id>:reconcile:deleted               AGENT_DELETED
    agent:<agent id>:withdrawal:<account id>         CREDENTIAL_SOURCE_WITHDRAWAL (the Agent's
                                                     managed account was withdrawn)
    agent_revision:<revision id>:reconcile           REVISION_RECONCILE (the deployment)
    agent_revision:<revision id>:maintenance:<n>     REVISION_MAINTENANCE (a repair, admitted
                                                     in second n of the epoch)

Every kind also declares its ``Priority`` class: what a user asked for (deploy, stop, delete,
a Namespace) is claimed ahead of repairs and periodic upkeep, which are still guaranteed their
share of each batch (``docs/queue.md``, Priority classes). The ``priority`` column is generated
from the kind by ``occ.work_priority`` (migration 0014), which states the same classes.

The ``controller_work_shape`` CHECK constraint ties the ``kind`` column to the same shapes. How
the workers run each kind is declared in ``occ.reconcile`` (one ``kinds.Handler`` per kind); the
queue itself reads only these specs.
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from occ.foundation import ids


class WorkKind(enum.StrEnum):
    """What a work item asks the workers to do (the ``kind`` column)."""

    NAMESPACE_READY = "namespace_ready"
    NAMESPACE_DELETED = "namespace_deleted"
    AGENT_STOPPED = "agent_stopped"
    AGENT_DELETED = "agent_deleted"
    CREDENTIAL_SOURCE_WITHDRAWAL = "credential_source_withdrawal"
    REVISION_RECONCILE = "revision_reconcile"
    REVISION_MAINTENANCE = "revision_maintenance"


class Priority(enum.IntEnum):
    """A work kind's class (the ``priority`` column); the value is the class's weight: of the
    seats of a claim that every class wants, each class takes its weight's share (4:2:1)."""

    INTENT = 4
    """What a user asked for: a deploy, a stop, a deletion, a Namespace."""
    REPAIR = 2
    """A repair the fleet observer admitted."""
    PERIODIC = 1
    """Periodic upkeep (no kind of this class yet)."""


class Subject(enum.Enum):
    """What a work id is about: the prefix of its subject's id."""

    NAMESPACE = "ns"
    AGENT = "agt"
    REVISION = "rev"


UUID4: Final = ids.UUID4_PATTERN
"""A stop request's discriminator."""
SECOND: Final = "0|[1-9][0-9]{0,14}"
"""A repair's discriminator: the second it was admitted (no leading zeros: one id a second)."""


@dataclass(frozen=True)
class KindSpec:
    """What the queue and the admissions know of one work kind."""

    kind: WorkKind
    id_format: str
    """The id, with ``{subject}`` and, where the kind has one, ``{discriminator}``."""
    subject: Subject
    priority: Priority
    discriminator: str | None = None
    """The pattern of the discriminator, for kinds with one."""
    namespace_target: str | None = None
    agent_target: str | None = None
    """The target columns an item of this kind writes (operators read them)."""

    @property
    def shape(self) -> re.Pattern[str]:
        """The id's shape: the format with the subject's and discriminator's patterns."""
        pattern = re.escape(self.id_format)
        pattern = pattern.replace(r"\{subject\}", rf"({self.subject.value}_{UUID4})")
        pattern = pattern.replace(r"\{discriminator\}", f"({self.discriminator})")
        return re.compile(pattern)


SPECS: Final[Mapping[WorkKind, KindSpec]] = {
    spec.kind: spec
    for spec in (
        KindSpec(
            WorkKind.NAMESPACE_READY,
            "namespace:{subject}:reconcile:ready",
            Subject.NAMESPACE,
            Priority.INTENT,
            namespace_target="ready",
        ),
        KindSpec(
            WorkKind.NAMESPACE_DELETED,
            "namespace:{subject}:reconcile:deleted",
            Subject.NAMESPACE,
            Priority.INTENT,
            namespace_target="deleted",
        ),
        KindSpec(
            WorkKind.AGENT_STOPPED,
            "agent:{subject}:reconcile:stopped:{discriminator}",
            Subject.AGENT,
            Priority.INTENT,
            discriminator=UUID4,
            agent_target="stopped",
        ),
        KindSpec(
            WorkKind.AGENT_DELETED,
            "agent:{subject}:reconcile:deleted",
            Subject.AGENT,
            Priority.INTENT,
            agent_target="deleted",
        ),
        KindSpec(
            WorkKind.CREDENTIAL_SOURCE_WITHDRAWAL,
            "agent:{subject}:withdrawal:{discriminator}",
            Subject.AGENT,
            Priority.INTENT,
            discriminator=f"acc_{UUID4}",
            agent_target="stopped",
        ),
        KindSpec(
            WorkKind.REVISION_RECONCILE,
            "agent_revision:{subject}:reconcile",
            Subject.REVISION,
            Priority.INTENT,
        ),
        KindSpec(
            WorkKind.REVISION_MAINTENANCE,
            "agent_revision:{subject}:maintenance:{discriminator}",
            Subject.REVISION,
            Priority.REPAIR,
            discriminator=SECOND,
        ),
    )
}
"""Every work kind's spec, by kind."""

_SHAPES: Final = {kind: spec.shape for kind, spec in SPECS.items()}


@dataclass(frozen=True)
class WorkKey:
    """A work item's kind, subject id and (for stops and maintenance) its discriminator."""

    kind: WorkKind
    subject: str
    """The Namespace, Agent or AgentRevision id the item is about."""
    discriminator: str | None = None
    """The stop request's uuid, or the second a repair was admitted in."""

    def __str__(self) -> str:
        return SPECS[self.kind].id_format.format(
            subject=self.subject, discriminator=self.discriminator
        )

    @property
    def spec(self) -> KindSpec:
        return SPECS[self.kind]

    @classmethod
    def parse(cls, work_id: str) -> WorkKey:
        """The key of a well-formed work id; ``ValueError`` for anything else."""
        for kind, shape in _SHAPES.items():
            match = shape.fullmatch(work_id)
            if match is not None:
                groups = match.groups()
                return cls(kind, groups[0], groups[1] if len(groups) > 1 else None)
        raise ValueError("not a work id")


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


def revision_maintenance(revision_id: str, second: int) -> WorkKey:
    """A repair's key: the revision and the second (of the epoch) it was admitted in."""
    return WorkKey(WorkKind.REVISION_MAINTENANCE, revision_id, str(second))
