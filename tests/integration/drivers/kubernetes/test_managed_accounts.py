"""A managed-account harness credential through real workers to the ``kubernetes`` driver,
against the fake API server over HTTP: the token lands in the revision's credential Secret with
its keyed fingerprint, and nowhere in the gateway's Deployment."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from occ.drivers.account import standin
from occ.drivers.compute.kubernetes import client, cluster_config, kinds, naming
from occ.foundation import fingerprints
from occ.state.db import Database
from tests.integration.drivers.kubernetes.conftest import Reconcile
from tests.support import processes, worlds
from tests.support.kube_api import FakeKubeAPI
from tests.support.processes import wait_for

TIMEOUT = 40.0
FINGERPRINT_KEY = "managed-account-kubernetes-fingerprint-key"


def test_the_account_token_is_delivered_like_a_secret(
    db: Database,
    env: dict[str, str],
    kube_api: FakeKubeAPI,
    kubeconfig: Path,
    reconcile: Reconcile,
    tmp_path: Path,
) -> None:
    backend_root = tmp_path / "accounts"
    world = reconcile(
        installation="accounts",
        OCC_ACCOUNT_BACKEND="standin",
        OCC_ACCOUNT_BACKEND_ROOT=str(backend_root),
        OCC_FINGERPRINT_KEY=FINGERPRINT_KEY,
    )
    backend = standin.StandinBackend(backend_root)
    account_id = worlds.use_managed_account(db, world, backend)
    reference = backend.current_token(account_id)
    assert reference is not None
    token = backend.token_value(reference)

    revision_id = worlds.deploy(db, world, accounts=backend)
    processes.nudge(env)
    namespace = naming.kubernetes_namespace("occ-", world.namespace_id)
    api = client.KubernetesApi(
        cluster_config.load_configuration(str(kubeconfig), None), timeout_s=10
    )
    gateway = naming.agent_object(world.agent_id)

    def template_runs_revision() -> bool:
        deployment = api.read(kinds.DEPLOYMENT, namespace, gateway)
        if deployment is None:
            return False
        annotations = deployment["spec"]["template"]["metadata"].get("annotations") or {}
        return annotations.get(naming.REVISION_ANNOTATION) == revision_id

    wait_for(template_runs_revision, timeout=TIMEOUT, message="the gateway template to switch")
    kube_api.mark_rollout(namespace, gateway)
    wait_for(
        lambda: worlds.deployment(db, world, revision_id).state == "active",
        timeout=TIMEOUT,
        message="the managed-account revision to become active",
    )

    secret = api.read(kinds.SECRET, namespace, naming.credential_secret(revision_id))
    assert secret is not None
    expected = fingerprints.of(token, fingerprints.revision_key(FINGERPRINT_KEY, revision_id))
    assert secret["metadata"]["annotations"][naming.FINGERPRINT_ANNOTATION] == expected
    values = [base64.b64decode(value).decode() for value in secret["data"].values()]
    assert token in values
    deployment = api.read(kinds.DEPLOYMENT, namespace, gateway)
    assert deployment is not None and token not in json.dumps(deployment)
    assert kube_api.validation_errors == []
