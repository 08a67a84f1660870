"""Worlds (see ``worlds``) for tests whose real worker processes reconcile the Namespace: the
Secret store those workers use, and a Namespace they make ready before its Agent is made."""

from __future__ import annotations

from typing import Any

from occ.controller import namespaces
from occ.foundation import harnesses
from occ.state import secret_store
from occ.state.db import Database
from tests.support import processes, worlds


def store(env: dict[str, str]) -> secret_store.SecretStore:
    """The store the workers of ``env`` seal and open Secrets with (its ``OCC_SECRET_KEY``)."""
    return secret_store.SecretStore(env["OCC_SECRET_KEY"])


def reconciled(
    db: Database,
    env: dict[str, str],
    *,
    admin: str,
    compute_driver: str,
    secret_value: str,
    document: dict[str, Any] | None = None,
    timeout: float = 30.0,
    harness: harnesses.Harness = harnesses.Harness.OPENCLAW,
) -> worlds.World:
    """A Namespace ``team`` that the workers of ``env``, woken, make ready within ``timeout``
    seconds, then its resources and one ``compute_driver`` Agent (see ``worlds.make``)."""
    namespace_id = namespaces.create_namespace(
        db, admin, namespaces.CreateNamespace(name="team")
    ).id
    processes.nudge(env)
    processes.wait_for(
        lambda: (
            namespaces.get_namespace(db, actor_id=admin, namespace_id=namespace_id).status
            == "ready"
        ),
        timeout=timeout,
        message="the Namespace to become ready",
    )
    return worlds.make(
        db,
        admin=admin,
        namespace_id=namespace_id,
        compute_driver=compute_driver,
        store=store(env),
        secret_value=secret_value,
        document=document,
        harness=harness,
    )
