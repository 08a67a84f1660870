"""Namespace work: ensure (``ready``) and delete (``deleted``) through the Compute Driver.

Reload the Namespace, re-authorize the original actor against current IAM, call the driver
under the claim, then publish the observation in one short transaction whose first statement
is the fenced queue transition: a stale worker's publication rolls back whole.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import orm

from occ import codes, errors, iam
from occ.drivers.compute import base
from occ.reconcile import authority, environment, outcome
from occ.reconcile.context import ClaimContext
from occ.state import audit, installation, namespaces, values, work_queue

_EXPECTED_STATUS = {"ready": "provisioning", "deleted": "deleting"}
_LIFECYCLE_ACTION = {
    "ready": "namespaces.lifecycle.ensure",
    "deleted": "namespaces.lifecycle.delete",
}
_ADMISSION_ACTION = {"ready": "namespaces.create", "deleted": "namespaces.delete"}
_DONE_CODE = {"ready": "NAMESPACE_READY", "deleted": "NAMESPACE_DELETED"}


def reconcile(worker: environment.Worker, context: ClaimContext) -> outcome.PassResult:
    """One pass over a Namespace work item."""
    database, policy, driver = worker.database, worker.policy, worker.driver
    owner = context.claim.owner
    target = owner.namespace_target or ""
    if target not in _EXPECTED_STATUS:
        with database.transaction() as session:
            work_queue.fail(session, context.claim, code="INVALID_TARGET")
        return outcome.permanent("INVALID_TARGET")

    with database.transaction() as session:
        namespace = namespaces.get(session, owner.namespace_id)
        if namespace is None or not namespace.live or namespace.status != _EXPECTED_STATUS[target]:
            work_queue.complete(session, context.claim, code="SUPERSEDED_TARGET")
            return outcome.success("SUPERSEDED_TARGET")
        denial = _denial(session, owner.actor_id, target, namespace)
        if denial is not None:
            if target == "ready":
                namespaces.transition(
                    session, namespace.id, expected="provisioning", status="failed"
                )
            return authority.refuse(
                session,
                context,
                action=_ADMISSION_ACTION[target],
                resource=iam.Resource.namespace(namespace.id),
                decision=denial,
            )

    spec = base.NamespaceSpec(
        id=namespace.id, name=namespace.name, existing_namespace=namespace.existing_namespace
    )
    context.renew_now()
    operation = context.operation()
    try:
        if target == "ready":
            observation = driver.ensure_namespace(operation, spec)
        else:
            observation = driver.delete_namespace(operation, spec)
    except base.TransientDriverError as exc:
        observation = base.Failed(exc.code, permanent=False, reason=exc.reason)
    except base.PermanentDriverError as exc:
        observation = base.Failed(exc.code, permanent=True, reason=exc.reason)
    if not isinstance(observation, base.Ready | base.Pending | base.Failed):
        observation = base.Failed("INVALID_DRIVER_OBSERVATION", permanent=True)
    with database.transaction() as session:
        return _publish(
            session,
            policy,
            context,
            target=target,
            namespace=namespace,
            observation=observation,
            driver_name=driver.name,
        )


def _denial(
    session: orm.Session, actor_id: str, target: str, namespace: namespaces.Namespace
) -> iam.Decision | None:
    """The refusal of the original actor under current IAM, or ``None``."""
    if target == "deleted":
        return authority.first_denial(
            session, [(actor_id, "namespace:delete", iam.Resource.namespace(namespace.id))]
        )
    current = installation.current(session)
    if current is None:
        raise errors.DependencyUnavailable("the installation is not bootstrapped")
    parent = iam.Resource.installation(current.id)
    checks = [(actor_id, "namespace:create", parent)]
    if namespace.existing_namespace is not None:
        checks.append((actor_id, "installation:administer", parent))
    return authority.first_denial(session, checks)


def _publish(
    session: orm.Session,
    policy: values.QueuePolicy,
    context: ClaimContext,
    *,
    target: str,
    namespace: namespaces.Namespace,
    observation: base.Observation,
    driver_name: str,
) -> outcome.PassResult:
    claim = context.claim
    details: dict[str, Any] = {"computeDriverId": driver_name, "attemptCount": claim.attempt_count}
    result: outcome.PassResult
    failed_namespace = False
    if isinstance(observation, base.Ready):
        code = _DONE_CODE[target]
        work_queue.complete(session, claim, code=code)
        if target == "ready":
            namespaces.transition(session, namespace.id, expected="provisioning", status="ready")
        else:
            namespaces.tombstone(session, namespace.id)
        result, audit_outcome = outcome.success(code), "success"
    elif isinstance(observation, base.Pending):
        deferred = work_queue.defer(session, policy, claim, code="NAMESPACE_INCOMPLETE")
        details["convergencePending"] = True
        if deferred.deadline_exceeded:
            failed_namespace = True
            result, audit_outcome = (outcome.permanent("CONVERGENCE_DEADLINE_EXCEEDED"), "failure")
        else:
            result = outcome.requeued(
                session, codes.Outcome.PENDING, "NAMESPACE_INCOMPLETE", deferred.available_at
            )
            audit_outcome = "success"
    elif observation.permanent:
        work_queue.fail(session, claim, code="NAMESPACE_FAILED")
        failed_namespace = True
        details["driverCode"] = observation.code
        result, audit_outcome = outcome.permanent("NAMESPACE_FAILED"), "failure"
    else:
        item = work_queue.retry(session, policy, claim, code="DEPENDENCY_UNAVAILABLE")
        details["driverCode"] = observation.code
        audit_outcome = "failure"
        if item.state == values.WorkState.FAILED_PERMANENT:
            failed_namespace = True
            result = outcome.permanent("DEPENDENCY_UNAVAILABLE")
        else:
            result = outcome.requeued(
                session, codes.Outcome.RETRY, "DEPENDENCY_UNAVAILABLE", item.available_at
            )
    if failed_namespace and target == "ready":
        namespaces.transition(session, namespace.id, expected="provisioning", status="failed")
    details["reasonCode"] = result.code
    audit.append(
        session,
        kind="mutation",
        action=_LIFECYCLE_ACTION[target],
        actor_id=claim.owner.actor_id,
        outcome=audit_outcome,
        namespace_id=namespace.id,
        resource_kind="namespace",
        resource_id=namespace.id,
        work_id=claim.work_id,
        details=details,
    )
    return result
