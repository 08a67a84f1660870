"""Revision reads: an Agent's revisions and a deployment's status (projected by
``occ.controller.deployment_status``), each behind ``agent_revision:read``.

The deployment id is the revision id. Revisions are returned as
``occ.state.revisions.Revision`` values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from occ import iam
from occ.controller import admission, deployment_status, listing
from occ.controller import agents as agent_use_cases
from occ.controller import namespaces as namespace_cases
from occ.state import agents, deploys, keyset, revisions
from occ.state.db import Database, Session

T = TypeVar("T")


def list_revisions(
    db: Database,
    actor_id: str,
    window: keyset.Window = keyset.EVERYTHING,
    *,
    namespace_id: str,
    agent_id: str,
) -> keyset.Page[revisions.Revision]:
    """The Agent's revisions the caller may read (``agent_revision:read`` each), newest first,
    the page ``window`` asks for.

    Raises:
        NotFound: no such Agent, or the caller may read neither it nor any of its revisions.
    """
    agent_use_cases.require_ids(namespace_id, agent_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        agent = _live_agent(session, namespace_id, agent_id)
        return listing.readable_children(
            session,
            actor_id,
            "agents.revisions.list",
            "agent_revision:read",
            agent_use_cases.resource(agent),
            resource_of=_resource,
            read=lambda rows: revisions.list_revisions(session, agent.id, rows),
            window=window,
            order=keyset.NEWEST_REVISION_FIRST,
        )


def get_revision(
    db: Database, actor_id: str, *, namespace_id: str, agent_id: str, revision_id: str
) -> revisions.Revision:
    """One revision of the Agent (``agent_revision:read``).

    Raises:
        NotFound: no such revision of this Agent, or the caller may not read it.
    """
    return _read_revision(
        db,
        actor_id,
        namespace_id,
        agent_id,
        revision_id,
        action="agents.revisions.read",
        then=lambda _session, revision: revision,
    )


def get_deployment(
    db: Database, actor_id: str, *, namespace_id: str, agent_id: str, deployment_id: str
) -> deployment_status.DeploymentView:
    """The status of a deployment (``agent_revision:read`` on its revision).

    Raises:
        NotFound: no such deployment of this Agent, or the caller may not read it.
    """

    def status(session: Session, revision: revisions.Revision) -> deployment_status.DeploymentView:
        agent = agent_use_cases.find(session, revision.namespace_id, revision.agent_id)
        work = deploys.deployment(session, revision.id)
        return deployment_status.project(admission.found(work, "deployment"), agent)

    return _read_revision(
        db,
        actor_id,
        namespace_id,
        agent_id,
        deployment_id,
        action="agents.deployments.read",
        then=status,
    )


def _read_revision(
    db: Database,
    actor_id: str,
    namespace_id: str,
    agent_id: str,
    revision_id: str,
    *,
    action: str,
    then: Callable[[Session, revisions.Revision], T],
) -> T:
    """What ``then`` makes of the Agent's revision in a read-only transaction, once
    ``agent_revision:read`` on it allowed ``action``; malformed ids answer ``NotFound`` before
    any query."""
    agent_use_cases.require_ids(namespace_id, agent_id)
    admission.require_id("agent_revision", revision_id)
    with admission.guarded(db, actor_id, read_only=True) as session:
        agent = _live_agent(session, namespace_id, agent_id)
        revision = admission.found(
            revisions.get_revision(session, agent.id, revision_id), "agent_revision"
        )
        admission.require(
            session,
            actor_id,
            action,
            "agent_revision:read",
            _resource(revision),
            hide_unless_readable=True,
        )
        return then(session, revision)


def _live_agent(session: Session, namespace_id: str, agent_id: str) -> agents.Agent:
    """The Agent of a live Namespace (no lock), or ``NotFound``."""
    namespace = namespace_cases.live(session, namespace_id)
    return agent_use_cases.find(session, namespace.id, agent_id)


# -- resources -------------------------------------------------------------------------------------


def _resource(revision: revisions.Revision) -> iam.Resource:
    return iam.Resource("agent_revision", revision.id, revision.namespace_id)
