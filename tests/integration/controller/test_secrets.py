"""Secret admission through a Secret Driver other than the sealed row: the Kubernetes one,
against the fake API server. The value lives in a tenant-local Kubernetes Secret, the row keeps
a reference, a creation that fails leaves no value behind, and a deletion removes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from occ.controller import namespaces, secrets
from occ.drivers.compute import base
from occ.drivers.secret import kubernetes
from occ.foundation import errors
from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from tests.integration.drivers.kubernetes import helpers
from tests.support import namespace_status
from tests.support.kube_api import FakeKubeAPI

VALUE = "sk-kept-in-kubernetes"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeKubeAPI, Settings]]:
    with helpers.validating_cluster(tmp_path) as cluster:
        yield cluster


def _tenant(db: Database, owner_db: Database, admin: str, settings: Settings) -> tuple[str, str]:
    command = namespaces.CreateNamespace(name="team-k")
    namespace_id = namespaces.create_namespace(db, admin, command).id
    namespace_status.set_status(owner_db, namespace_id)
    spec = base.NamespaceSpec(id=namespace_id, name="team-k")
    return namespace_id, helpers.tenant(settings, spec)


def _stored(db: Database, secret_id: str) -> bytes:
    with db.transaction() as session:
        return bytes(
            session.execute(
                sa.select(models.Secret.value_ciphertext).where(models.Secret.id == secret_id)
            ).scalar_one()
        )


def test_the_value_is_kept_by_the_driver_and_removed_with_the_secret(
    db: Database, owner_db: Database, admin: str, cluster: tuple[FakeKubeAPI, Settings]
) -> None:
    fake, settings = cluster
    namespace_id, kubernetes_namespace = _tenant(db, owner_db, admin, settings)
    store = kubernetes.KubernetesSecrets.from_settings(settings)
    secret = secrets.create_secret(
        db,
        admin,
        secrets.CreateSecret(namespace_id=namespace_id, name="token", value=VALUE),
        store=store,
    )
    stored = _stored(db, secret.id)
    assert VALUE.encode() not in stored
    assert store.unseal(namespace_id, secret.id, stored) == VALUE
    name = kubernetes.object_name(secret.id)
    assert fake.get("secrets", kubernetes_namespace, name) is not None

    secrets.delete_secret(
        db,
        admin,
        secrets.DeleteSecret(namespace_id=namespace_id, secret_id=secret.id),
        store=store,
    )
    assert fake.get("secrets", kubernetes_namespace, name) is None
    store.api.close()


def test_a_creation_that_fails_after_the_value_was_kept_removes_it(
    db: Database, owner_db: Database, admin: str, cluster: tuple[FakeKubeAPI, Settings]
) -> None:
    fake, settings = cluster
    namespace_id, kubernetes_namespace = _tenant(db, owner_db, admin, settings)
    store = kubernetes.KubernetesSecrets.from_settings(settings)
    secrets.create_secret(
        db,
        admin,
        secrets.CreateSecret(namespace_id=namespace_id, name="token", value=VALUE),
        store=store,
    )
    with pytest.raises(errors.Conflict):  # the name is taken: the row is refused after seal
        secrets.create_secret(
            db,
            admin,
            secrets.CreateSecret(namespace_id=namespace_id, name="token", value="x"),
            store=store,
        )
    assert len(fake.objects("secrets", kubernetes_namespace)) == 1  # only the first one's
    store.api.close()


def test_an_unready_tenant_refuses_the_creation_and_writes_nothing(
    db: Database, owner_db: Database, admin: str, cluster: tuple[FakeKubeAPI, Settings]
) -> None:
    _, settings = cluster
    command = namespaces.CreateNamespace(name="team-p")
    namespace_id = namespaces.create_namespace(db, admin, command).id
    namespace_status.set_status(owner_db, namespace_id)  # ready in occ, not yet on Kubernetes
    store = kubernetes.KubernetesSecrets.from_settings(settings)
    with pytest.raises(errors.DependencyUnavailable):
        secrets.create_secret(
            db,
            admin,
            secrets.CreateSecret(namespace_id=namespace_id, name="t", value=VALUE),
            store=store,
        )
    with db.transaction() as session:
        assert session.execute(sa.select(sa.func.count()).select_from(models.Secret)).scalar() == 0
    store.api.close()
