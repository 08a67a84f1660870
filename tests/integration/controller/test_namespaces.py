"""Admission use cases on real PostgreSQL: bootstrap, Namespace create/delete/read, denials,
atomicity, and the retry or takeover of a failed deletion."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from occ import iam
from occ.controller import installation, namespaces
from occ.foundation import errors, ids
from occ.state import audit, iam_policy, models, values, work_claims, work_keys, work_queue
from occ.state import roles as role_rows
from occ.state.db import Database
from tests.integration.controller.support import count, events, work
from tests.support import audits, rows
from tests.support.grants import principal


def fail_work(db: Database, policy: values.QueuePolicy, work_id: str) -> None:
    """Run the queue until ``work_id`` is failed_permanent (completing what comes before it)."""
    for _ in range(5):
        with db.transaction() as session:
            claims = work_claims.claim(session, policy, limit=10)
        for dispatch in claims:
            with db.transaction() as session:
                run = work_queue.start(session, policy, dispatch)
                assert run is not None
                if run.work_id == work_id:
                    work_queue.fail(session, run, code="NAMESPACE_FAILED")
                    return
                work_queue.complete(session, run, code="NAMESPACE_READY")
    raise AssertionError(f"{work_id} was never claimed")


# -- bootstrap ----------------------------------------------------------------------------------


def test_bootstrap_is_idempotent(db: Database, boot: installation.BootstrapResult) -> None:
    assert boot.created
    assert ids.is_valid("installation", boot.installation_id)
    again = installation.bootstrap_installation(db, name="other name", admin_name="someone else")
    assert not again.created
    assert (
        again.installation_id,
        again.installation_name,
        again.admin_principal_id,
        again.administrator_role_id,
        again.binding_id,
    ) == (
        boot.installation_id,
        "test installation",
        boot.admin_principal_id,
        boot.administrator_role_id,
        boot.binding_id,
    )
    assert count(db, models.Installation) == 1
    assert count(db, models.Principal) == 1
    [event] = events(db)
    assert (event.kind, event.action, event.actor_id, event.resource_id) == (
        "bootstrap",
        "installation.bootstrap",
        boot.admin_principal_id,
        boot.installation_id,
    )

    with db.transaction() as session:
        assert boot.administrator_role_id is not None
        role = role_rows.get_role(session, boot.administrator_role_id)
        assert role is not None and role.name == installation.ADMINISTRATOR_ROLE
        assert set(role.permissions) == set(iam.ADMINISTRATOR_PERMISSIONS)
    assert boot.admin_principal_id is not None
    view = installation.get_installation(db, actor_id=boot.admin_principal_id)
    assert view.id == boot.installation_id


def test_bootstrap_validates_names(db: Database) -> None:
    with pytest.raises(errors.InvalidInput) as raised:
        installation.bootstrap_installation(db, name="ok", admin_name=" padded")
    assert raised.value.errors[0].path == ("admin_name",)
    assert count(db, models.Installation) == 0


# -- create -------------------------------------------------------------------------------------


def test_create_writes_row_audit_and_work_together(db: Database, admin: str) -> None:
    view = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="team-a"))

    assert view.status == "provisioning" and view.name == "team-a"
    assert view.existing_namespace is None
    work_id = f"namespace:{view.id}:reconcile:ready"
    item = work(db, work_id)
    assert item is not None
    assert item.state is values.WorkState.QUEUED
    assert item.owner == values.WorkOwner(namespace_id=view.id, actor_id=admin)
    assert item.kind == work_keys.WorkKind.NAMESPACE_READY
    [event] = events(db, namespace_id=view.id)
    assert audits.headline(event) == ("mutation", "namespaces.create", admin, "success")
    assert (event.resource_kind, event.resource_id, event.work_id) == (
        "namespace",
        view.id,
        work_id,
    )
    assert event.details["name"] == "team-a"
    assert event.details["authorization"]["principalId"] == admin
    assert namespaces.get_namespace(db, actor_id=admin, namespace_id=view.id) == view


def test_denied_create_writes_only_the_denial(
    db: Database, boot: installation.BootstrapResult
) -> None:
    stranger = principal(db, "namespace:read")
    before = len(events(db))

    with pytest.raises(errors.Forbidden) as raised:
        namespaces.create_namespace(db, stranger, namespaces.CreateNamespace(name="nope"))

    assert raised.value.decision.reason is iam.Reason.NO_MATCHING_BINDING
    assert count(db, models.Namespace) == 0
    assert count(db, models.ControllerWork) == 0
    all_events = events(db)
    assert len(all_events) == before + 1
    denial = all_events[0]
    assert audits.headline(denial) == (
        "authorization_denial",
        "namespaces.create",
        stranger,
        "denied",
    )
    assert (denial.namespace_id, denial.resource_kind, denial.resource_id) == (
        None,
        "installation",
        boot.installation_id,
    )
    assert denial.details["permission"] == "namespace:create"
    assert denial.details["reason"] == "no_matching_binding"
    assert denial.details["request"] == {"name": "nope"}


def test_admission_is_atomic(db: Database, admin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = len(events(db))

    calls: list[str] = []

    def broken_append(*args: Any, **kwargs: Any) -> str:
        calls.append(kwargs["action"])
        raise RuntimeError("audit insert failed")

    monkeypatch.setattr(audit, "append", broken_append)
    with pytest.raises(RuntimeError, match="audit insert failed"):
        namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="half-done"))
    monkeypatch.undo()

    assert calls == ["namespaces.create"]  # reached after the row and the work were written
    assert count(db, models.Namespace) == 0
    assert count(db, models.ControllerWork) == 0
    assert len(events(db)) == before
    # the name was not reserved by the rolled-back attempt
    assert (
        namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="half-done")).name
        == "half-done"
    )


@pytest.mark.parametrize(
    "name",
    [
        "",
        " leading",
        "trailing ",
        "tab\tinside",
        "nul\x00",
        "x" * 201,
        "\u0085",
    ],
)
def test_invalid_names_are_rejected_at_the_field(db: Database, admin: str, name: str) -> None:
    with pytest.raises(errors.InvalidInput) as raised:
        namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name=name))
    assert [error.path for error in raised.value.errors] == [("name",)]
    assert count(db, models.Namespace) == 0


def test_longest_and_unicode_names_are_accepted(db: Database, admin: str) -> None:
    assert (
        namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="x" * 200)).name
        == "x" * 200
    )
    assert (
        namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="équipe 東京")).name
        == "équipe 東京"
    )


def test_duplicate_name_conflicts(db: Database, admin: str) -> None:
    namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="twice"))
    with pytest.raises(errors.Conflict):
        namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="twice"))
    assert count(db, models.Namespace) == 1
    assert count(db, models.ControllerWork) == 1


def test_existing_namespace_needs_installation_administer(db: Database, admin: str) -> None:
    creator = principal(db, "namespace:create")

    with pytest.raises(errors.Forbidden):
        namespaces.create_namespace(
            db, creator, namespaces.CreateNamespace(name="adopt", existing_namespace="kube-ns")
        )
    assert count(db, models.Namespace) == 0
    [denial] = events(db, kind="authorization_denial")
    assert denial.details["permission"] == "installation:administer"
    assert denial.details["request"] == {"name": "adopt", "existingNamespace": "kube-ns"}

    view = namespaces.create_namespace(
        db, admin, namespaces.CreateNamespace(name="adopt", existing_namespace="kube-ns")
    )
    assert view.existing_namespace == "kube-ns"
    with pytest.raises(errors.Conflict):
        namespaces.create_namespace(
            db, admin, namespaces.CreateNamespace(name="again", existing_namespace="kube-ns")
        )
    assert (
        namespaces.create_namespace(db, creator, namespaces.CreateNamespace(name="plain")).status
        == "provisioning"
    )


@pytest.mark.parametrize("label", ["Upper", "-dash", "dash-", "a" * 64, "under_score", ""])
def test_existing_namespace_must_be_a_dns_label(db: Database, admin: str, label: str) -> None:
    with pytest.raises(errors.InvalidInput) as raised:
        namespaces.create_namespace(
            db, admin, namespaces.CreateNamespace(name="n", existing_namespace=label)
        )
    assert raised.value.errors[0].path == ("existing_namespace",)


def test_create_before_bootstrap_is_not_found(db: Database) -> None:
    with pytest.raises(errors.NotFound):
        namespaces.create_namespace(
            db, ids.new("principal"), namespaces.CreateNamespace(name="early")
        )


# -- delete -------------------------------------------------------------------------------------


def test_delete_of_a_non_empty_namespace_is_refused(db: Database, admin: str) -> None:
    view = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="busy"))
    with db.transaction() as session:
        rows.agent(session, namespace_id=view.id)

    with pytest.raises(errors.NamespaceNotEmpty, match="1 agent"):
        namespaces.delete_namespace(db, admin, namespaces.DeleteNamespace(namespace_id=view.id))

    assert namespaces.get_namespace(db, actor_id=admin, namespace_id=view.id).status == (
        "provisioning"
    )
    assert work(db, f"namespace:{view.id}:reconcile:deleted") is None


def test_delete_admits_deletion_work_and_repeats_idempotently(db: Database, admin: str) -> None:
    view = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="gone"))
    deleted = namespaces.delete_namespace(
        db, admin, namespaces.DeleteNamespace(namespace_id=view.id)
    )

    assert deleted.status == "deleting"
    work_id = f"namespace:{view.id}:reconcile:deleted"
    item = work(db, work_id)
    assert item is not None and item.state is values.WorkState.QUEUED
    assert item.owner == values.WorkOwner(namespace_id=view.id, actor_id=admin)
    delete_events = [e for e in events(db, namespace_id=view.id) if e.action == "namespaces.delete"]
    assert [(e.kind, e.work_id, e.details["previousStatus"]) for e in delete_events] == [
        ("mutation", work_id, "provisioning")
    ]

    # again by the initiator, and by another permitted principal: nothing changes
    other = principal(db, "namespace:delete", "namespace:read")
    for actor in (admin, other):
        assert namespaces.delete_namespace(
            db, actor, namespaces.DeleteNamespace(namespace_id=view.id)
        ).status == ("deleting")
    assert work(db, work_id) == item
    assert len(events(db, namespace_id=view.id)) == 2


def test_failed_deletion_is_requeued_by_its_initiator(
    db: Database, admin: str, policy: values.QueuePolicy
) -> None:
    view = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="retry"))
    namespaces.delete_namespace(db, admin, namespaces.DeleteNamespace(namespace_id=view.id))
    work_id = f"namespace:{view.id}:reconcile:deleted"
    fail_work(db, policy, work_id)
    failed = work(db, work_id)
    assert failed is not None and failed.state is values.WorkState.FAILED_PERMANENT

    assert namespaces.delete_namespace(
        db, admin, namespaces.DeleteNamespace(namespace_id=view.id)
    ).status == ("deleting")

    requeued = work(db, work_id)
    assert requeued is not None
    assert (requeued.state, requeued.attempt_count, requeued.reason_code) == (
        values.WorkState.QUEUED,
        0,
        None,
    )
    assert requeued.owner.actor_id == admin
    assert requeued.created_at > failed.created_at  # a retry restarts the convergence deadline
    retry = events(db, work_id=work_id)[0]
    assert (retry.kind, retry.action, retry.actor_id) == ("mutation", "namespaces.delete", admin)
    assert retry.details["requeued"] is True
    assert retry.details["takeover"] is False
    assert "previousActorId" not in retry.details
    assert retry.details["previousReasonCode"] == "NAMESPACE_FAILED"


def test_failed_deletion_is_taken_over_by_another_permitted_caller(
    db: Database, admin: str, policy: values.QueuePolicy
) -> None:
    view = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="takeover"))
    initiator = principal(db, "namespace:delete", "namespace:read")
    namespaces.delete_namespace(db, initiator, namespaces.DeleteNamespace(namespace_id=view.id))
    work_id = f"namespace:{view.id}:reconcile:deleted"
    fail_work(db, policy, work_id)

    namespaces.delete_namespace(db, admin, namespaces.DeleteNamespace(namespace_id=view.id))

    item = work(db, work_id)
    assert item is not None and item.state is values.WorkState.QUEUED
    assert item.owner.actor_id == admin
    takeover = events(db, work_id=work_id)[0]
    assert (takeover.action, takeover.actor_id) == ("namespaces.delete", admin)
    assert takeover.details["takeover"] is True
    assert takeover.details["previousActorId"] == initiator
    # the requeued work is in progress again: another repeat is a no-op
    namespaces.delete_namespace(db, initiator, namespaces.DeleteNamespace(namespace_id=view.id))
    assert work(db, work_id) == item


def test_delete_hides_namespaces_the_caller_may_not_read(db: Database, admin: str) -> None:
    view = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="private"))
    stranger = principal(db)
    reader = principal(db, "namespace:read")

    with pytest.raises(errors.NotFound):
        namespaces.delete_namespace(db, stranger, namespaces.DeleteNamespace(namespace_id=view.id))
    with pytest.raises(errors.Forbidden):
        namespaces.delete_namespace(db, reader, namespaces.DeleteNamespace(namespace_id=view.id))
    with pytest.raises(errors.NotFound):
        namespaces.delete_namespace(
            db, admin, namespaces.DeleteNamespace(namespace_id=ids.new("namespace"))
        )
    with pytest.raises(errors.NotFound):
        namespaces.delete_namespace(db, admin, namespaces.DeleteNamespace(namespace_id="not an id"))

    denials = events(db, kind="authorization_denial")
    assert [(e.actor_id, e.action, e.resource_id) for e in denials] == [
        (reader, "namespaces.delete", view.id),
        (stranger, "namespaces.delete", view.id),
    ]
    assert work(db, f"namespace:{view.id}:reconcile:deleted") is None
    assert namespaces.get_namespace(db, actor_id=admin, namespace_id=view.id).status == (
        "provisioning"
    )


def test_delete_by_a_disabled_principal_is_denied(db: Database, admin: str) -> None:
    view = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="kept"))
    operator = principal(db, "namespace:delete", "namespace:read")
    with db.transaction() as session:
        iam_policy.disable_principal(session, operator)

    with pytest.raises(errors.NotFound):
        namespaces.delete_namespace(db, operator, namespaces.DeleteNamespace(namespace_id=view.id))
    [denial] = events(db, kind="authorization_denial")
    assert denial.details["reason"] == "principal_disabled"


# -- reads --------------------------------------------------------------------------------------


def test_reads_are_filtered_by_namespace_read(db: Database, admin: str) -> None:
    a = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="a"))
    b = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="b"))
    reader = principal(db, "namespace:read", namespace_id=a.id)

    assert namespaces.list_namespaces(db, actor_id=admin) == [a, b]
    assert namespaces.list_namespaces(db, actor_id=reader) == [a]
    assert namespaces.list_namespaces(db, actor_id=ids.new("principal")) == []
    assert namespaces.get_namespace(db, actor_id=reader, namespace_id=a.id) == a
    with pytest.raises(errors.NotFound):
        namespaces.get_namespace(db, actor_id=reader, namespace_id=b.id)
    [denial] = events(db, kind="authorization_denial")
    assert (denial.action, denial.resource_id) == ("namespaces.read", b.id)


def test_tombstoned_namespaces_are_hidden(db: Database, admin: str) -> None:
    view = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="tomb"))
    namespaces.delete_namespace(db, admin, namespaces.DeleteNamespace(namespace_id=view.id))
    with db.transaction() as session:
        session.execute(
            sa.update(models.Namespace)
            .where(models.Namespace.id == view.id)
            .values(deleted_at=sa.func.clock_timestamp())
        )

    assert namespaces.list_namespaces(db, actor_id=admin) == []
    with pytest.raises(errors.NotFound):
        namespaces.get_namespace(db, actor_id=admin, namespace_id=view.id)
    with pytest.raises(errors.NotFound):
        namespaces.delete_namespace(db, admin, namespaces.DeleteNamespace(namespace_id=view.id))
    with pytest.raises(errors.Conflict):  # tombstones keep their names
        namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="tomb"))


def test_installation_read_needs_installation_read(db: Database, admin: str) -> None:
    with pytest.raises(errors.Forbidden):
        installation.get_installation(db, actor_id=principal(db, "namespace:read"))
