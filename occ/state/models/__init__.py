"""SQLAlchemy tables of the ``occ`` schema, one module a group of tables; no behaviour.

The migrations in ``alembic/versions`` are the authority for CHECK constraints, triggers,
grants and functions; these declarations mirror their tables, keys and indexes so that
``alembic check`` stays clean. Importing the package declares every table on
``Base.metadata`` (Alembic's target), and its callers name a table as ``models.Agent``.
"""

from __future__ import annotations

from occ.state.models.access import AccessBinding, Restriction, Role
from occ.state.models.agents import (
    Agent,
    AgentRevision,
    AgentRuntime,
    ObserverCursor,
    RevisionRetirement,
)
from occ.state.models.base import Base
from occ.state.models.principals import ApiKey, Principal, PrincipalIdentity, UserSession
from occ.state.models.records import AuditEvent, AuditExport, IdempotencyKey
from occ.state.models.resources import Account, Configuration, Secret
from occ.state.models.tenancy import Installation, Namespace, NamespaceQuota
from occ.state.models.work import ControllerWork

__all__ = [
    "AccessBinding",
    "Account",
    "Agent",
    "AgentRevision",
    "AgentRuntime",
    "ApiKey",
    "AuditEvent",
    "AuditExport",
    "Base",
    "Configuration",
    "ControllerWork",
    "IdempotencyKey",
    "Installation",
    "Namespace",
    "NamespaceQuota",
    "ObserverCursor",
    "Principal",
    "PrincipalIdentity",
    "Restriction",
    "RevisionRetirement",
    "Role",
    "Secret",
    "UserSession",
]
