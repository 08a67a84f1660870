"""Reading an Agent's runtime logs: authorized on the exact Agent, audited once, redacted.

``open_logs`` checks ``agent:read_logs`` on the Agent (hidden as 404 from a caller who may not
even read it), finds its running revision (else ``AgentNotRunning``), records one ``access``
audit event for the read (never one per line), and opens the Compute Driver's log reader. Each
line is redacted before it leaves: the revision's harness credential and its fingerprint key
never pass, in any form ``redaction`` knows, wherever they stand in a line. Bounds: at most
``MAX_TAIL`` lines back, and a follow ends after ``MAX_FOLLOW_S``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from occ.controller import admission, redaction
from occ.controller import agents as agent_cases
from occ.controller import namespaces as namespace_cases
from occ.drivers.compute import base, runtime_logs
from occ.drivers.secret import SecretDriver
from occ.foundation import errors, fingerprints
from occ.state import agents, audit, revisions, secrets
from occ.state.db import Database, Session

ACTION: Final = "agents.read_logs"
PERMISSION: Final = "agent:read_logs"
DEFAULT_TAIL: Final = 100
"""Lines back when the caller does not say."""
MAX_TAIL: Final = 10_000
"""The most lines back one read answers."""
MAX_FOLLOW_S: Final = 300.0
"""How long one follow lasts at most; a client that wants more reads again."""


@dataclass(frozen=True, kw_only=True)
class ReadLogs:
    """One read of an Agent's runtime logs."""

    namespace_id: str
    agent_id: str
    tail: int = DEFAULT_TAIL
    since: dt.datetime | None = None
    follow: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.tail <= MAX_TAIL:
            raise errors.InvalidInput.at(("tail",), f"must be between 0 and {MAX_TAIL}")
        if self.since is not None and self.since.tzinfo is None:
            raise errors.InvalidInput.at(("since",), "must carry its time zone")


def open_logs(
    db: Database,
    actor_id: str,
    command: ReadLogs,
    *,
    reader: runtime_logs.LogReader,
    secret_driver: SecretDriver,
    fingerprint_key: str,
) -> runtime_logs.LogLines:
    """The Agent's runtime log lines, redacted (``agent:read_logs``).

    Raises:
        NotFound: no such Agent in this live Namespace, or the caller may not read it.
        Forbidden: the caller may read the Agent but not its logs.
        AgentNotRunning: the Agent has no running revision.
        LogsUnavailable: its runtime has no logs to read now.
        LogsUnsupported: the Compute Driver cannot read logs.
        DependencyUnavailable: the infrastructure did not answer.
    """
    agent_cases.require_ids(command.namespace_id, command.agent_id)
    with admission.guarded(db, actor_id) as session:
        namespace = namespace_cases.live(session, command.namespace_id)
        agent = agent_cases.find(session, namespace.id, command.agent_id)
        admission.require(
            session,
            actor_id,
            ACTION,
            PERMISSION,
            agent_cases.resource(agent),
            hide_unless_readable=True,
        )
        revision = _running_revision(session, agent)
        hidden = _secret_values(session, revision, secret_driver, fingerprint_key)
        audit.append(
            session,
            kind=audit.EventKind.ACCESS,
            action=ACTION,
            actor_id=actor_id,
            outcome=audit.EventOutcome.SUCCESS,
            namespace_id=agent.namespace_id,
            resource_kind="agent",
            resource_id=agent.id,
            details={
                "revisionId": revision.id,
                "tail": command.tail,
                "since": None if command.since is None else command.since.isoformat(),
                "follow": command.follow,
            },
        )
    target = runtime_logs.LogTarget(
        namespace_id=agent.namespace_id,
        agent_id=agent.id,
        revision_id=revision.id,
        harness_mode=revision.harness_mode,
    )
    query = runtime_logs.LogQuery(
        tail=command.tail,
        since=command.since,
        follow=command.follow,
        follow_s=MAX_FOLLOW_S if command.follow else 0.0,
    )
    try:
        lines = reader.read_logs(target, query)
    except base.DriverError as exc:
        raise _refusal(exc) from None
    return runtime_logs.LogLines(redacted(lines, hidden), lines.close)


def redacted(lines: Iterable[str], hidden: Iterable[str]) -> Iterator[str]:
    """``lines`` with every form of each hidden value replaced (``redaction``)."""
    return redaction.Redactor(hidden, cut_at=runtime_logs.MAX_LINE_BYTES).lines(lines)


def _running_revision(session: Session, agent: agents.Agent) -> revisions.Revision:
    revision_id = agent.active_revision_id
    if (
        agent.deleting
        or agent.desired_runtime_state != agents.DesiredRuntimeState.RUNNING
        or not revision_id
    ):
        raise errors.AgentNotRunning("the Agent has no running revision whose logs to read")
    revision = revisions.get_revision(session, agent.id, revision_id)
    if revision is None:
        raise errors.AgentNotRunning("the Agent has no running revision whose logs to read")
    return revision


def _secret_values(
    session: Session,
    revision: revisions.Revision,
    secret_driver: SecretDriver,
    fingerprint_key: str,
) -> tuple[str, ...]:
    """What a line must never show: the revision's harness credential (when it can be read)
    and its fingerprint key."""
    hidden = [fingerprints.revision_key(fingerprint_key, revision.id)]
    secret_id = revision.harness_auth.get("secretId")
    if isinstance(secret_id, str):
        sealed = secrets.sealed_value(session, revision.namespace_id, secret_id)
        if sealed is not None:
            # unreadable: nothing to hunt for, the runtime cannot have been given it either
            with contextlib.suppress(errors.SecretUnreadable):
                hidden.append(secret_driver.unseal(revision.namespace_id, secret_id, sealed))
    return tuple(hidden)


def _refusal(exc: base.DriverError) -> errors.OccError:
    if exc.code == runtime_logs.UNSUPPORTED:
        return errors.LogsUnsupported(exc.reason or None)
    if exc.code == runtime_logs.UNAVAILABLE:
        return errors.LogsUnavailable(exc.reason or None)
    if isinstance(exc, base.TransientDriverError):
        return errors.DependencyUnavailable("the runtime's logs could not be read now; try again")
    return errors.LogsUnavailable(f"the runtime's logs could not be read ({exc.code})")
