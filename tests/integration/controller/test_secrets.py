"""Secret admission through a Secret Driver other than the sealed row: the Kubernetes one,
against the fake API server. The value lives in a tenant-local Kubernetes Secret, the row keeps
a reference, a creation that fails leaves no value behind, and a deletion removes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import sqlalchemy as sa

from occ.controller import namespaces, secrets
from occ.drivers.compute import base
from occ.drivers.secret import kubernetes
from occ.foundation import errors
from occ.settings.config import Settings
from occ.state import models
from occ.state import secrets as secret_rows
from occ.state.db import Database
from tests.integration.drivers.kubernetes import helpers
from tests.support import namespace_status
from tests.support.kube_api import FakeKubeAPI

VALUE = "sk-kept-in-kubernetes"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeKubeAPI, Settings]]:
    with helpers.validating_cluster(tmp_path) as cluster:
        yield cluster


@pytest.fixture
def store(cluster: tuple[FakeKubeAPI, Settings]) -> Iterator[kubernetes.KubernetesSecrets]:
    """The Kubernetes Secret Driver on the fake cluster; its client is closed after the test."""
    store = kubernetes.KubernetesSecrets.from_settings(cluster[1])
    yield store
    store.api.close()


def _ready_in_occ(db: Database, owner_db: Database, admin: str, name: str) -> str:
    """A Namespace ``name`` whose row is ready (whatever Kubernetes holds); its id."""
    namespace_id = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name=name)).id
    namespace_status.set_status(owner_db, namespace_id)
    return namespace_id


class Tenant(NamedTuple):
    """A Namespace ready in occ and on Kubernetes (the fake cluster's)."""

    fake: FakeKubeAPI
    namespace_id: str
    kubernetes_namespace: str


@pytest.fixture
def tenant(
    db: Database, owner_db: Database, admin: str, cluster: tuple[FakeKubeAPI, Settings]
) -> Tenant:
    fake, settings = cluster
    namespace_id = _ready_in_occ(db, owner_db, admin, "team-k")
    spec = base.NamespaceSpec(id=namespace_id, name="team-k")
    return Tenant(fake, namespace_id, helpers.tenant(settings, spec))


def _create(
    db: Database,
    admin: str,
    namespace_id: str,
    store: kubernetes.KubernetesSecrets,
    value: str = VALUE,
) -> secret_rows.Secret:
    """Create the Secret ``token`` holding ``value`` through ``store``."""
    return secrets.create_secret(
        db,
        admin,
        secrets.CreateSecret(namespace_id=namespace_id, name="token", value=value),
        store=store,
    )


def _stored(db: Database, secret_id: str) -> bytes:
    with db.transaction() as session:
        return bytes(
            session.execute(
                sa.select(models.Secret.value_ciphertext).where(models.Secret.id == secret_id)
            ).scalar_one()
        )


def test_the_value_is_kept_by_the_driver_and_removed_with_the_secret(
    db: Database, admin: str, store: kubernetes.KubernetesSecrets, tenant: Tenant
) -> None:
    secret = _create(db, admin, tenant.namespace_id, store)
    stored = _stored(db, secret.id)
    assert VALUE.encode() not in stored
    assert store.unseal(tenant.namespace_id, secret.id, stored) == VALUE
    name = kubernetes.object_name(secret.id)
    assert tenant.fake.get("secrets", tenant.kubernetes_namespace, name) is not None

    secrets.delete_secret(
        db,
        admin,
        secrets.DeleteSecret(namespace_id=tenant.namespace_id, secret_id=secret.id),
        store=store,
    )
    assert tenant.fake.get("secrets", tenant.kubernetes_namespace, name) is None


def test_a_creation_that_fails_after_the_value_was_kept_removes_it(
    db: Database, admin: str, store: kubernetes.KubernetesSecrets, tenant: Tenant
) -> None:
    _create(db, admin, tenant.namespace_id, store)
    with pytest.raises(errors.Conflict):  # the name is taken: the row is refused after seal
        _create(db, admin, tenant.namespace_id, store, value="x")
    # only the first one's
    assert len(tenant.fake.objects("secrets", tenant.kubernetes_namespace)) == 1


def test_an_unready_tenant_refuses_the_creation_and_writes_nothing(
    db: Database, owner_db: Database, admin: str, store: kubernetes.KubernetesSecrets
) -> None:
    namespace_id = _ready_in_occ(db, owner_db, admin, "team-p")  # not yet on Kubernetes
    with pytest.raises(errors.DependencyUnavailable):
        _create(db, admin, namespace_id, store)
    with db.transaction() as session:
        assert session.execute(sa.select(sa.func.count()).select_from(models.Secret)).scalar() == 0
