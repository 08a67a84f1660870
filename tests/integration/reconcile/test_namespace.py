"""Namespace work run in-process: the original actor is re-authorized before any Compute call."""

from __future__ import annotations

from pathlib import Path

from occ.controller import installation, namespaces
from occ.state import iam_policy, models, values
from occ.state import roles as role_rows
from occ.state.db import Database
from tests.integration.reconcile import support

POLICY = values.QueuePolicy()


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
