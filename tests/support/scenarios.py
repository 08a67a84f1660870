"""Scenarios for unit tests of the revision pass: an Agent with numbered revisions as values.

``agent()`` says which revision a work item deploys (or maintains, in which bucket), which one
is active, whether the Agent should be running, and which revisions another driver owns. The
values are what the state package hands out; nothing here reads or writes a database.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from occ.drivers.compute import base
from occ.foundation import ids
from occ.state import agents, work_keys
from occ.state import revisions as revision_rows
from tests.support import fake_driver

_EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Scenario:
    """An Agent, all its revisions, and the revision a work item is about."""

    agent: agents.Agent
    revisions: tuple[revision_rows.Revision, ...]
    """Every revision of the Agent, by revision number."""
    revision_id: str
    key: work_keys.WorkKey
    credential: base.Credential | None
    admitted: frozenset[str] = frozenset()
    """Revisions (ids) whose deployment was admitted and has not ended, beside the item's own."""

    @property
    def revision(self) -> revision_rows.Revision:
        return next(r for r in self.revisions if r.id == self.revision_id)

    def numbered(self, number: int) -> revision_rows.Revision:
        return next(r for r in self.revisions if r.revision_number == number)


def agent(
    *,
    revisions: int = 1,
    deploying: int | None = None,
    active: int | None = None,
    desired_runtime_state: agents.DesiredRuntimeState = agents.DesiredRuntimeState.RUNNING,
    maintenance_bucket: int | None = None,
    on_other_driver: tuple[int, ...] = (),
    credential: str | None = "harness-credential-value",
    admitted: tuple[int, ...] = (),
) -> Scenario:
    """Revisions 1..``revisions``; the item deploys ``deploying`` (the newest by default), or
    maintains it in ``maintenance_bucket``; ``active`` is the Agent's active revision number;
    ``admitted`` numbers revisions whose deployments are still under way."""
    deploying = revisions if deploying is None else deploying
    if not 1 <= deploying <= revisions or (active is not None and not 1 <= active <= revisions):
        raise ValueError("deploying and active must name revisions 1..revisions")
    namespace_id, agent_id = ids.new("namespace"), ids.new("agent")
    principal_id, configuration_id = ids.new("principal"), ids.new("configuration")
    secret_id = ids.new("secret") if credential is not None else None
    rows = tuple(
        revision_rows.Revision(
            id=ids.new("agent_revision"),
            namespace_id=namespace_id,
            agent_id=agent_id,
            revision_number=number,
            actor_id=ids.new("principal"),
            configuration_id=configuration_id,
            configuration_generation=number,
            configuration_document={"model": "gpt-5"},
            harness_id="openclaw",
            harness_version="1.0.0",
            harness_mode="embedded",
            compute_driver="other" if number in on_other_driver else fake_driver.FAKE_DRIVER_NAME,
            harness_auth={"kind": "secret", "secretId": secret_id} if secret_id else {},
            service_principal_id=principal_id,
            created_at=_EPOCH + dt.timedelta(minutes=number),
        )
        for number in range(1, revisions + 1)
    )
    agent = agents.Agent(
        id=agent_id,
        namespace_id=namespace_id,
        name="assistant",
        configuration_id=configuration_id,
        harness_id="openclaw",
        harness_version="1.0.0",
        execution_mode="embedded",
        harness_auth_secret_id=secret_id,
        compute_driver=fake_driver.FAKE_DRIVER_NAME,
        service_principal_id=principal_id,
        status=agents.AgentStatus.ACTIVE,
        desired_runtime_state=desired_runtime_state,
        active_revision_id=rows[active - 1].id if active is not None else None,
        created_at=_EPOCH,
        updated_at=_EPOCH,
        endpoint=f"fake://{rows[active - 1].id}" if active is not None else None,
    )
    target = rows[deploying - 1].id
    key = (
        work_keys.revision_reconcile(target)
        if maintenance_bucket is None
        else work_keys.revision_maintenance(target, maintenance_bucket)
    )
    return Scenario(
        agent=agent,
        revisions=rows,
        revision_id=target,
        key=key,
        credential=base.Credential(credential, "test-fingerprint-key")
        if credential is not None
        else None,
        admitted=frozenset(rows[number - 1].id for number in admitted),
    )
