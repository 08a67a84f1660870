"""An Installation with one Namespace and one ``docker`` Agent, made through the use cases, and
the reads the lifecycle tests wait on (deployments, Agents, work rows, engine objects)."""

from __future__ import annotations

from typing import Any

from occ.drivers.compute.docker import naming
from occ.foundation import fingerprints
from occ.settings.config import Settings
from occ.state import models
from occ.state.db import Database
from tests.support import audits, processes, worker_worlds, worlds
from tests.support import gateways as stand_in_gateways

SECRET_VALUE = "sk-docker-lifecycle-never-logged"


World = worlds.World


def make(db: Database, env: dict[str, str], *, document: dict[str, Any] | None = None) -> World:
    """Bootstrap, a Namespace reconciled by the workers (its network), a Configuration, a
    Secret and a ``docker`` Agent whose service principal may use both."""
    [world] = worker_worlds.ready(
        db,
        env,
        admin=worlds.installation_admin(db, "docker"),
        compute_driver="docker",
        secret_value=SECRET_VALUE,
        document=document,
        reconciled_within=30.0,
    )
    return world


def namespace_status(db: Database, namespace_id: str) -> str | None:
    with db.transaction() as session:
        row = session.get(models.Namespace, namespace_id)
        if row is None or row.deleted_at is not None:
            return "deleted"  # a tombstone
        return str(row.status)


# the nudge, the deploy and the reads of every deploying suite, under the names these tests use
send_nudge = processes.nudge
deploy = worlds.deploy
deployment = worlds.deployment
state_is = worlds.state_is
agent = worlds.agent
agent_gone = worlds.agent_gone
reconcile_passes = audits.reconcile_passes


health = stand_in_gateways.health


def gateways(client: Any, **labels: str) -> list[Any]:
    """Gateway containers carrying ``labels`` (keys without the ``dev.occ.`` prefix)."""
    filters = [f"{naming.ROLE}={naming.GATEWAY}"] + [
        f"{naming.PREFIX}{key.replace('_', '-')}={value}" for key, value in labels.items()
    ]
    return list(client.containers.list(all=True, filters={"label": filters}, ignore_removed=True))


def fingerprint(env: dict[str, str], revision_id: str) -> str:
    """The keyed fingerprint of ``SECRET_VALUE`` a gateway of ``revision_id`` shows, under the
    installation key of the workers started with ``env``."""
    installation_key = Settings.from_env(env).credential_fingerprint_key
    return fingerprints.of(SECRET_VALUE, fingerprints.revision_key(installation_key, revision_id))
