"""A change the caller was allowed to make, and the audit event of its success.

A use case authorizes its action inside its transaction (``admission.guarded``) and, once the
change is written, audits it through the ``Change`` the decision allowed: one ``mutation``
event naming the action, the caller, the changed resource and the decision's evidence
(``authorization``), so no use case spells those out again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from occ import iam
from occ.state import audit
from occ.state.db import Session


@dataclass(frozen=True, kw_only=True)
class Change:
    """An action ``decision`` allowed ``actor_id`` to take in ``session``'s transaction."""

    session: Session
    actor_id: str
    action: str
    decision: iam.Decision

    def audit(
        self,
        resource_kind: str,
        resource_id: str,
        namespace_id: str | None,
        details: Mapping[str, Any],
        *,
        work_id: str | None = None,
    ) -> None:
        """Audit the change's success on the resource: ``details`` and the decision's evidence
        (``authorization``)."""
        audit.mutation(
            self.session,
            action=self.action,
            actor_id=self.actor_id,
            namespace_id=namespace_id,
            resource_kind=resource_kind,
            resource_id=resource_id,
            work_id=work_id,
            details={**details, "authorization": self.decision.evidence.as_details()},
        )
