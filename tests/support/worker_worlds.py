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


def ready(
    db: Database,
    env: dict[str, str],
    *,
    admin: str,
    secret_value: str,
    compute_driver: str = "local",
    agent_names: Sequence[str] = ("agent",),
    document: dict[str, Any] | None = None,
    harness: harnesses.Harness = harnesses.Harness.OPENCLAW,
    reconciled_within: float | None = None,
) -> list[worlds.World]:
    """A ready Namespace ``team``, its resources sealed with the store of ``env``'s workers
    and one ``compute_driver`` Agent per name (see ``worlds.make``). With
    ``reconciled_within``, the workers, woken, make the Namespace ready within that many
    seconds; without, it is moved to ready as they would (``namespace_status.created_ready``)."""
    if reconciled_within is None:
        namespace_id = namespace_status.created_ready(db, admin=admin)
    else:
        namespace_id = _reconciled_namespace(db, env, admin=admin, timeout=reconciled_within)
    return worlds.make(
        db,
        admin=admin,
        namespace_id=namespace_id,
        compute_driver=compute_driver,
        store=store(env),
        secret_value=secret_value,
        agent_names=agent_names,
        document=document,
        harness=harness,
    )


def _reconciled_namespace(db: Database, env: dict[str, str], *, admin: str, timeout: float) -> str:
    """A Namespace ``team`` that the workers of ``env``, woken, make ready within ``timeout``
    seconds; its id."""
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
    return namespace_id


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
