"""Worlds (see ``worlds``) for tests whose real worker processes reconcile the Namespace: the
Secret store those workers use, a Namespace they make ready (or one moved to ready as they
would) before its Agents are made, and the wait for a deployment the workers carry out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from occ.controller import namespaces
from occ.foundation import harnesses
from occ.state import secret_store
from occ.state.db import Database
from tests.support import namespace_status, processes, worlds


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


def ready(
    db: Database,
    env: dict[str, str],
    *,
    admin: str,
    secret_value: str,
    agent_names: Sequence[str] = ("agent",),
    compute_driver: str = "local",
    document: dict[str, Any] | None = None,
) -> list[worlds.World]:
    """A Namespace ``team`` moved to ready as its worker would (see
    ``namespace_status.created_ready``), its resources sealed with the store of ``env``'s
    workers, and one ``compute_driver`` Agent per name (see ``worlds.make_many``)."""
    return worlds.make_many(
        db,
        admin=admin,
        namespace_id=namespace_status.created_ready(db, admin=admin),
        compute_driver=compute_driver,
        store=store(env),
        secret_value=secret_value,
        agent_names=agent_names,
        document=document,
    )


def wait_state(
    db: Database,
    world: worlds.World,
    revision_id: str,
    state: str,
    what: str = "the deployment",
    timeout: float = 30.0,
) -> None:
    """Wait up to ``timeout`` seconds for the deployment of ``revision_id`` to reach ``state``
    (``what`` names it in the failure)."""
    processes.wait_for(
        lambda: worlds.state_is(db, world, revision_id, state),
        timeout=timeout,
        message=f"{what} to become {state}",
    )
