"""Namespace work run in-process: the original actor is re-authorized before any Compute call."""

from __future__ import annotations

import threading
from pathlib import Path

import sqlalchemy as sa

from occ.controller import installation, namespaces
from occ.drivers.compute.kubernetes import KubernetesComputeDriver, rbac
from occ.reconcile import executor
from occ.reconcile.environment import Worker
from occ.settings.config import Settings
from occ.state import iam_policy, models, values
from occ.state import restrictions as restriction_rows
from occ.state import roles as role_rows
from occ.state.db import Database
from tests.integration.reconcile import support
from tests.support.kube_api import FakeKubeAPI

POLICY = values.QueuePolicy()


def _admin(db: Database) -> str:
    """The first administrator of a newly bootstrapped Installation."""
    boot = installation.bootstrap_installation(db, name="n", admin_name="admin")
    assert boot.admin_principal_id is not None
    return boot.admin_principal_id


def _restrict_creation(db: Database, admin: str, namespace_id: str) -> restriction_rows.Restriction:
    """A Restriction, added by ``admin``, of ``namespace:create`` narrowed to the Namespace."""
    with db.transaction() as session:
        return restriction_rows.insert(
            session, permission="namespace:create", created_by=admin, namespace_id=namespace_id
        )


def test_a_revoked_actor_fails_the_namespace_without_compute(db: Database, tmp_path: Path) -> None:
    boot = installation.bootstrap_installation(db, name="n", admin_name="admin")
    assert boot.admin_principal_id is not None
    with db.transaction() as session:
        creator = iam_policy.create_principal(session, name="creator", kind="human")
        assert boot.administrator_role_id is not None
        iam_policy.bind(
            session,
            role_id=boot.administrator_role_id,
            principal_id=creator.id,
            created_by=boot.admin_principal_id,
        )
    namespace_id = namespaces.create_namespace(
        db, creator.id, namespaces.CreateNamespace(name="team")
    ).id
    with db.transaction() as session:
        iam_policy.disable_principal(session, creator.id)

    driver, claim, result = support.run_the_one_item(db, tmp_path, POLICY)

    assert result is not None and result.code == "ACTOR_REVOKED"
    assert driver.effects() == []
    with db.transaction() as session:
        namespace = session.get(models.Namespace, namespace_id)
        work = session.get(models.ControllerWork, claim.work_id)
    assert namespace is not None and namespace.status == "failed"
    assert work is not None and (work.state, work.reason_code) == (
        "failed_permanent",
        "ACTOR_REVOKED",
    )
    assert support.denials(db, claim.work_id) == ["namespaces.create"]


def test_adoption_is_refused_when_the_actor_lost_installation_administer(
    db: Database, tmp_path: Path
) -> None:
    """The worker re-checks ``installation:administer`` right before adopting a namespace:
    an actor who was an administrator at admission but is no longer gets no adoption."""
    boot = installation.bootstrap_installation(db, name="n", admin_name="admin")
    assert boot.admin_principal_id is not None and boot.administrator_role_id is not None
    with db.transaction() as session:
        adopter = iam_policy.create_principal(session, name="adopter", kind="human")
        binding = iam_policy.bind(
            session,
            role_id=boot.administrator_role_id,
            principal_id=adopter.id,
            created_by=boot.admin_principal_id,
        )
    namespace_id = namespaces.create_namespace(
        db, adopter.id, namespaces.CreateNamespace(name="adopted", existing_namespace="tenant-a")
    ).id
    with db.transaction() as session:
        # still allowed to create Namespaces, no longer an administrator
        creator_role = role_rows.create_role(
            session, name="creators", namespace_id=None, permissions=["namespace:create"]
        )
        iam_policy.bind(
            session,
            role_id=creator_role.id,
            principal_id=adopter.id,
            created_by=boot.admin_principal_id,
        )
        iam_policy.revoke_binding(session, binding.id)

    driver, _, result = support.run_the_one_item(db, tmp_path, POLICY)

    assert result is not None and result.code == "AUTHORIZATION_DENIED"
    assert driver.effects() == []  # nothing was adopted
    with db.transaction() as session:
        namespace = session.get(models.Namespace, namespace_id)
    assert namespace is not None and namespace.status == "failed"


def test_a_namespace_whose_role_is_missing_stays_provisioning_with_the_driver_code(
    db: Database, tmp_path: Path
) -> None:
    """Tenant-scoped: a Namespace placed where occ's Role was not applied yet is deferred, not
    failed, and its pass's audit names ``KUBERNETES_PERMISSION_MISSING``; nothing is written."""
    namespace_id = namespaces.create_namespace(
        db,
        _admin(db),
        namespaces.CreateNamespace(name="tenant", existing_namespace="tenant-b"),
    ).id
    with FakeKubeAPI(validate=True) as fake:
        fake.create_foreign("namespaces", None, {"metadata": {"name": "tenant-b"}})
        fake.grant_only(rbac.provisioning(["tenant-a"]))  # not tenant-b's yet
        settings = Settings(
            kubernetes_kubeconfig=str(fake.write_kubeconfig(tmp_path / "kubeconfig")),
            kubernetes_gateway_image="registry.example/gateway:1",
            kubernetes_installation="tenant-scoped",
            kubernetes_managed_namespaces="tenant-a,tenant-b",
        )
        driver = KubernetesComputeDriver.from_settings(settings)
        before = fake.resource_version
        try:
            worker = Worker(
                database=db,
                policy=POLICY,
                driver=driver,
                shutdown=threading.Event(),
                settings=settings,
            )
            [claim] = executor.claim_batch(db, POLICY, max_in_flight=5)
            result = executor.run(worker, claim.work_id, str(claim.token))
        finally:
            driver.close()
        assert fake.resource_version == before

    assert result is not None and result.code == "NAMESPACE_INCOMPLETE"
    with db.transaction() as session:
        namespace = session.get(models.Namespace, namespace_id)
        [event] = session.scalars(
            sa.select(models.AuditEvent).where(
                models.AuditEvent.work_id == claim.work_id,
                models.AuditEvent.action == "namespaces.lifecycle.ensure",
            )
        ).all()
    assert namespace is not None and namespace.status == "provisioning"
    assert event.details["driverCode"] == "KUBERNETES_PERMISSION_MISSING"
    assert event.details["convergencePending"] is True


def test_a_restriction_on_the_namespace_refuses_its_provisioning(
    db: Database, tmp_path: Path
) -> None:
    """A Restriction narrowed to the Namespace (added while it is provisioning) beats the
    Installation-wide grant the creation was admitted under: no tenant infrastructure."""
    admin = _admin(db)
    namespace_id = namespaces.create_namespace(
        db, admin, namespaces.CreateNamespace(name="held")
    ).id
    restriction = _restrict_creation(db, admin, namespace_id)

    driver, claim, result = support.run_the_one_item(db, tmp_path, POLICY)

    assert result is not None and result.code == "AUTHORIZATION_DENIED"
    assert driver.effects() == []
    with db.transaction() as session:
        namespace = session.get(models.Namespace, namespace_id)
        [details] = session.scalars(
            sa.select(models.AuditEvent.details).where(
                models.AuditEvent.kind == "authorization_denial",
                models.AuditEvent.work_id == claim.work_id,
            )
        ).all()
    assert namespace is not None and namespace.status == "failed"
    assert details["reason"] == "restricted"
    assert details["authorization"]["restrictionIds"] == [restriction.id]


def test_a_restriction_elsewhere_does_not_hold_provisioning_back(
    db: Database, tmp_path: Path
) -> None:
    admin = _admin(db)
    other = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="other")).id
    support.run_the_one_item(db, tmp_path, POLICY)
    namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name="free"))
    _restrict_creation(db, admin, other)

    _, _, result = support.run_the_one_item(db, tmp_path, POLICY)

    assert result is not None and result.code == "NAMESPACE_READY"
