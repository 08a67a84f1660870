"""What drivers are told: an AgentRevision row as the driver's ``RevisionSpec``."""

from __future__ import annotations

from occ.drivers.compute import base
from occ.state import revisions


def revision(
    row: revisions.Revision, credential: base.Credential | None = None
) -> base.RevisionSpec:
    """The driver's view of a revision; ``credential`` only for a deploy pass's effects."""
    return base.RevisionSpec(
        namespace_id=row.namespace_id,
        agent_id=row.agent_id,
        revision_id=row.id,
        revision_number=row.revision_number,
        configuration_generation=row.configuration_generation,
        configuration_document=row.configuration_document,
        harness_id=row.harness_id,
        harness_version=row.harness_version,
        harness_mode=row.harness_mode,
        service_principal_id=row.service_principal_id,
        credential=credential,
    )
