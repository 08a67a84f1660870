"""A hook owner for driver tests: records every call, and fails at the stages it is told to.

It also records what it could see of a secret: whether a revision it received carried a
credential, and whether its operation carried a claim token; tests assert both never happen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from occ.drivers.compute import base, hooks


@dataclass
class RecordingOwner:
    """Records ``(stage, subject id)`` per call; ``fail`` maps a stage to what it raises."""

    name: str = "iam:recording"
    environment: dict[str, str] = field(default_factory=dict)
    fail: dict[str, Exception] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    saw_credential: bool = False
    saw_claim_token: bool = False

    def _record(self, stage: str, operation: base.Operation, subject: str) -> None:
        self.calls.append((stage, subject))
        self.saw_claim_token = self.saw_claim_token or bool(operation.claim_token)
        if stage in self.fail:
            raise self.fail[stage]

    def after_namespace_prepared(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        self._record("after_namespace_prepared", operation, namespace.id)

    def before_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec, launch: hooks.LaunchSpec
    ) -> None:
        self.saw_credential = self.saw_credential or revision.credential is not None
        self._record("before_workload_start", operation, revision.revision_id)
        launch.environment.update(self.environment)

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self.saw_credential = self.saw_credential or revision.credential is not None
        self._record("before_workload_stop", operation, revision.revision_id)

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        self._record("before_namespace_delete", operation, namespace.id)

    def stages(self) -> list[str]:
        return [stage for stage, _ in self.calls]

    def assert_saw_no_secret(self) -> None:
        assert not self.saw_credential, "an owner received the harness credential"
        assert not self.saw_claim_token, "an owner received the claim token"
