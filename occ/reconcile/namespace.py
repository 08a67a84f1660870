"""Namespace work: ensure (``NAMESPACE_READY``) and delete (``NAMESPACE_DELETED``) through the
Compute Driver, and the handlers of both kinds.

The start reads the Namespace in the same statement (``occ.state.starts``); the pass checks it
and re-authorizes the original actor against current IAM (``prepare``), calls the driver under
the claim, then publishes the observation in one short transaction whose first statement is the
fenced queue transition: a stale worker's publication rolls back whole. A terminal failure of
ready work, wherever it happens, fails a still-provisioning Namespace (the kind's failure
effect). A deleted Namespace's service principals are disabled, and their keys revoked, with
its tombstone.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from occ import iam
from occ.drivers.compute import base
from occ.foundation import codes, errors
from occ.reconcile import authority, environment, kinds, outcome, settle
from occ.reconcile.context import ClaimContext
from occ.state import (
    api_keys,
    audit,
    hot_statements,
    iam_policy,
    namespaces,
    publications,
    starts,
    values,
)
from occ.state.db import Session
from occ.state.work_keys import WorkKind

Code = codes.Code


@dataclass(frozen=True)
class _Target:
    """What a Namespace work kind expects, calls and records."""

    ensure: bool
    """Ensure the infrastructure (else delete it)."""
    expected_status: namespaces.NamespaceStatus
    lifecycle_action: str
    admission_action: str
    done: Code


_ENSURE = _Target(
    True,
    namespaces.NamespaceStatus.PROVISIONING,
    "namespaces.lifecycle.ensure",
    "namespaces.create",
    Code.NAMESPACE_READY,
)
_DELETE = _Target(
    False,
    namespaces.NamespaceStatus.DELETING,
    "namespaces.lifecycle.delete",
    "namespaces.delete",
    Code.NAMESPACE_DELETED,
)


def start_with_namespace(
    worker: environment.Worker, work_id: str, token: uuid.UUID
) -> kinds.Started[namespaces.Namespace | None] | None:
    """The start that reads the item's Namespace in the same statement (``None``: gone)."""
    with worker.database.autocommit_connection() as connection:
        started = starts.start_namespace_work(connection, worker.policy, work_id, token)
    return None if started is None else kinds.Started(started.claim, started.namespace)


def ensure(
    worker: environment.Worker, context: ClaimContext, loaded: namespaces.Namespace | None
) -> outcome.PassResult:
    """One pass over a ``NAMESPACE_READY`` item."""
    return _reconcile(worker, context, loaded, _ENSURE)


def delete(
    worker: environment.Worker, context: ClaimContext, loaded: namespaces.Namespace | None
) -> outcome.PassResult:
    """One pass over a ``NAMESPACE_DELETED`` item."""
    return _reconcile(worker, context, loaded, _DELETE)


def prepare(
    session: Session,
    worker: environment.Worker,
    context: ClaimContext,
    namespace: namespaces.Namespace | None,
    target: _Target,
) -> namespaces.Namespace | outcome.PassResult:
    """Check the Namespace the start read (``None``: gone) and re-authorize the actor: the
    Namespace to act on, or the pass's result when it ends here.

    ``session`` is in autocommit (right after the start, which read the Namespace): it only
    reads, and writes one statement at most; a refusal writes in a transaction of its own.
    """
    claim = context.claim
    if namespace is None or not namespace.live or namespace.status != target.expected_status:
        return settle.complete(session, context, Code.SUPERSEDED_TARGET)  # one statement
    denial = _denial(session, worker, claim.owner.actor_id, target, namespace)
    if denial is not None:
        with worker.database.transaction() as refusal:
            return authority.refuse(
                refusal,
                context,
                action=target.admission_action,
                resource=iam.Resource.namespace(namespace.id),
                decision=denial,
            )
    return namespace


def _reconcile(
    worker: environment.Worker,
    context: ClaimContext,
    loaded: namespaces.Namespace | None,
    target: _Target,
) -> outcome.PassResult:
    database, driver = worker.database, worker.driver
    with database.autocommit() as session:
        prepared = prepare(session, worker, context, loaded, target)
    if isinstance(prepared, outcome.PassResult):
        return prepared
    namespace = prepared

    spec = base.NamespaceSpec(
        id=namespace.id, name=namespace.name, existing_namespace=namespace.existing_namespace
    )
    context.renew_now()
    operation = context.operation()
    try:
        if target.ensure:
            observation = driver.ensure_namespace(operation, spec)
        else:
            observation = driver.delete_namespace(operation, spec)
    except base.TransientDriverError as exc:
        observation = base.Failed(exc.code, permanent=False, reason=exc.reason)
    except base.PermanentDriverError as exc:
        observation = base.Failed(exc.code, permanent=True, reason=exc.reason)
    if not isinstance(observation, base.Ready | base.Pending | base.Failed):
        observation = base.Failed(Code.INVALID_DRIVER_OBSERVATION, permanent=True)
    if isinstance(observation, base.Ready) and target.ensure:
        with database.autocommit_connection() as connection:  # one fenced statement
            return _publish_ready(
                connection, worker, context, target=target, namespace=namespace, ready=observation
            )
    with database.transaction() as session:
        return _publish(
            session, worker, context, target=target, namespace=namespace, observation=observation
        )


def _fail_provisioning_namespace(
    session: Session, item: values.WorkItem, details: Mapping[str, Any]
) -> None:
    """The Namespace becomes ``failed`` if it is still provisioning, with one audit event."""
    namespace_id = item.owner.namespace_id
    if not namespaces.transition(
        session,
        namespace_id,
        expected=namespaces.NamespaceStatus.PROVISIONING,
        status=namespaces.NamespaceStatus.FAILED,
    ):
        return
    audit.work_event(
        session,
        item,
        action=_ENSURE.lifecycle_action,
        outcome="failure",
        resource_kind="namespace",
        resource_id=namespace_id,
        details={**details, "reasonCode": item.reason_code, "status": "failed"},
    )


READY = kinds.Handler(
    kind=WorkKind.NAMESPACE_READY,
    start=start_with_namespace,
    reconcile=ensure,
    operation="namespace.ready",
    on_failed=_fail_provisioning_namespace,
)
DELETED = kinds.Handler(
    kind=WorkKind.NAMESPACE_DELETED,
    start=start_with_namespace,
    reconcile=delete,
    operation="namespace.deleted",
)


def _denial(
    session: Session,
    worker: environment.Worker,
    actor_id: str,
    target: _Target,
    namespace: namespaces.Namespace,
) -> iam.Decision | None:
    """The refusal of the original actor under current IAM, or ``None``."""
    if not target.ensure:
        return authority.first_denial(
            session, [(actor_id, "namespace:delete", iam.Resource.namespace(namespace.id))]
        )
    current = worker.installation.current(session)
    if current is None:
        raise errors.DependencyUnavailable("the installation is not bootstrapped")
    parent = iam.Resource.installation(current.id)
    checks = [(actor_id, "namespace:create", parent)]
    if namespace.existing_namespace is not None:
        # adoption of an existing namespace is an administrator's decision, re-checked here
        checks.append((actor_id, "installation:administer", parent))
    denial = authority.first_denial(session, checks)
    if denial is not None:
        return denial
    # the Namespace's own Restrictions: a rule narrowed to it (or to it as the resource) beats
    # the Installation-wide grant the creation was admitted under
    return authority.first_restriction(
        session,
        [
            (actor_id, permission, iam.Resource.namespace(namespace.id))
            for _, permission, _ in checks
        ],
    )


def _publish_ready(
    connection: hot_statements.Target,
    worker: environment.Worker,
    context: ClaimContext,
    *,
    target: _Target,
    namespace: namespaces.Namespace,
    ready: base.Ready,
) -> outcome.PassResult:
    """A ready Namespace: the completion, the status and the lifecycle audit in one fenced
    statement (``publications``), the same rows ``_publish`` would write."""
    claim = context.claim
    details = {**_details(worker, claim, ready), "reasonCode": target.done}
    event = _lifecycle(target, claim, namespace.id, outcome="success", details=details)
    publications.complete_namespace_ready(
        connection, claim, code=target.done, event=audit.parameters(**event)
    )
    return outcome.success(target.done)


def _publish(
    session: Session,
    worker: environment.Worker,
    context: ClaimContext,
    *,
    target: _Target,
    namespace: namespaces.Namespace,
    observation: base.Observation,
) -> outcome.PassResult:
    """Any other observation: the fenced transition first, then the Namespace and its audit,
    in the caller's transaction."""
    claim, policy = context.claim, worker.policy
    details = _details(worker, claim, observation)
    if isinstance(observation, base.Ready):  # a deletion (a ready ensure is _publish_ready)
        result = settle.complete(session, context, target.done)
        if namespaces.tombstone(session, namespace.id):
            _disable_principals(session, context, namespace.id)
    elif isinstance(observation, base.Pending):
        details["convergencePending"] = True
        result = settle.defer(session, policy, context, Code.NAMESPACE_INCOMPLETE, details=details)
    elif observation.permanent:
        result = settle.fail(session, context, Code.NAMESPACE_FAILED, details=details)
    else:
        result = settle.retry(
            session, policy, context, Code.DEPENDENCY_UNAVAILABLE, details=details
        )
    if result.outcome == codes.Outcome.PERMANENT and target.ensure:
        return result  # the kind's failure effect recorded the failed Namespace
    details = {**details, "reasonCode": result.code}
    audit_outcome = _audit_outcome(result, observation)
    audit.append(
        session, **_lifecycle(target, claim, namespace.id, outcome=audit_outcome, details=details)
    )
    return result


def _details(
    worker: environment.Worker, claim: values.Claim, observation: base.Observation
) -> dict[str, Any]:
    details: dict[str, Any] = {
        "computeDriverId": worker.driver.name,
        "attemptCount": claim.attempt_count,
    }
    if isinstance(observation, base.Failed) or (
        isinstance(observation, base.Pending) and observation.code
    ):
        details["driverCode"] = observation.code
    return details


def _lifecycle(
    target: _Target,
    claim: values.Claim,
    namespace_id: str,
    *,
    outcome: str,
    details: dict[str, Any],
) -> audit.Event:
    """The lifecycle audit event of a pass."""
    return {
        "kind": "mutation",
        "action": target.lifecycle_action,
        "actor_id": claim.owner.actor_id,
        "outcome": outcome,
        "namespace_id": namespace_id,
        "resource_kind": "namespace",
        "resource_id": namespace_id,
        "work_id": claim.work_id,
        "details": details,
    }


def _disable_principals(session: Session, context: ClaimContext, namespace_id: str) -> None:
    """The Namespace's service principals go with it: disabled and their keys revoked, in the
    tombstone's transaction, one audit event each (the item's Namespace is this one)."""
    for principal in iam_policy.disable_scoped_to(session, namespace_id):
        revoked_keys = api_keys.revoke_all_of(session, principal.id)
        audit.work_event(
            session,
            context.claim,
            action="principals.disable",
            resource_kind="principal",
            resource_id=principal.id,
            details={"reason": "namespace_deleted", "revokedKeyIds": revoked_keys},
        )


def _audit_outcome(result: outcome.PassResult, observation: base.Observation) -> str:
    if result.outcome == codes.Outcome.PERMANENT or isinstance(observation, base.Failed):
        return "failure"
    return "success"
