"""Namespace quotas: how many Agents, Secrets and Configurations a Namespace may hold, and how
many revisions each of its Agents may make.

Each quota's limit is the Namespace's override when an administrator set one
(``set_quotas``, needing ``installation:administer``, audited), else the installation's default
(``OCC_QUOTA_*``, passed in as ``defaults``). A create that would pass its quota changes nothing
and raises ``QuotaExceeded`` (409 ``QUOTA_EXCEEDED``) naming the quota, its limit and usage.
``enforce`` runs inside the create's transaction under a lock of that Namespace's quota, so
concurrent creates count one after another and never pass it together. Lowering a limit
below what a Namespace uses deletes nothing: creates are refused until usage drops below it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from occ.controller import admission, policy
from occ.controller import namespaces as namespace_cases
from occ.foundation import errors
from occ.state import quotas as state
from occ.state.db import Database, Session

LIMIT_MAX: Final = 1_000_000
"""Largest limit an override may set."""
UNSET: Final = state.Counts(
    agents=LIMIT_MAX, revisions_per_agent=LIMIT_MAX, secrets=LIMIT_MAX, configurations=LIMIT_MAX
)
"""The defaults of a caller that passes none (the API passes the installation's): only the
Namespaces' own quotas then bind."""
_ACTION: Final = "namespaces.set_quotas"
_DENIED: Final = "setting a Namespace's quotas needs installation:administer"
API_NAMES: Final = {
    "agents": "agents",
    "revisions_per_agent": "revisionsPerAgent",
    "secrets": "secrets",
    "configurations": "configurations",
}
"""Each quota as the API, the audit and ``QuotaExceeded`` name it."""
_NOUNS: Final = {
    "agents": "Agents",
    "revisions_per_agent": "revisions per Agent",
    "secrets": "Secrets",
    "configurations": "Configurations",
}


@dataclass(frozen=True, kw_only=True)
class Quota:
    """One quota of a Namespace: its limit, what is used of it, and whether the limit is the
    Namespace's own (``False``: the installation's default)."""

    limit: int
    used: int
    overridden: bool


@dataclass(frozen=True, kw_only=True)
class NamespaceQuotas:
    """Every quota of one Namespace."""

    namespace_id: str
    agents: Quota
    revisions_per_agent: Quota
    secrets: Quota
    configurations: Quota


@dataclass(frozen=True, kw_only=True)
class SetQuotas:
    """New overrides of a Namespace's quotas: a number sets one, ``None`` returns it to the
    default, a quota not named stays as it is."""

    namespace_id: str
    limits: Mapping[str, int | None] = field(default_factory=dict)


def limit(session: Session, namespace_id: str, quota: str, defaults: state.Counts) -> int:
    """The Namespace's limit of ``quota``: its override, else the default."""
    own = state.overrides(session, namespace_id).of(quota)
    default = defaults.of(quota)
    assert default is not None, "every default is set"
    return default if own is None else own


def enforce(session: Session, namespace_id: str, quota: str, defaults: state.Counts) -> None:
    """Before a create that counts one more against ``quota``: lock the Namespace's quota (held
    until the transaction ends), then count.

    Raises:
        QuotaExceeded: the Namespace already uses all of it.
    """
    state.lock(session, namespace_id, quota)
    allowed = limit(session, namespace_id, quota, defaults)
    used = state.usage(session, namespace_id).of(quota)
    assert used is not None
    if used >= allowed:
        raise exceeded(quota, allowed, used)


def exceeded(quota: str, allowed: int, used: int) -> errors.QuotaExceeded:
    """The refusal of a create past ``quota``."""
    return errors.QuotaExceeded(
        f"the Namespace's quota of {allowed} {_NOUNS[quota]} is used up ({used}); delete one"
        " or ask an administrator to raise it",
        quota=API_NAMES[quota],
        limit=allowed,
        usage=used,
    )


def get_quotas(
    db: Database, actor_id: str, *, namespace_id: str, defaults: state.Counts
) -> NamespaceQuotas:
    """The Namespace's quotas (``namespace:read`` on it).

    Raises:
        NotFound: no such live Namespace, or the caller may not read it.
    """
    with admission.guarded(db, actor_id, read_only=True) as session:
        namespace = namespace_cases.readable(
            session, actor_id, "namespaces.get_quotas", namespace_id
        )
        return _read(session, namespace.id, defaults)


def set_quotas(
    db: Database, actor_id: str, command: SetQuotas, *, defaults: state.Counts
) -> NamespaceQuotas:
    """Set overrides of the Namespace's quotas (``installation:administer``); audited with the
    overrides before and after.

    Raises:
        NotFound: no such live Namespace, or the caller may not read it.
        InvalidInput: an unknown quota, or a limit not from 0 to ``LIMIT_MAX``.
        Forbidden: the caller may read the Namespace but not administer the Installation.
    """
    for name, value in command.limits.items():
        if name not in state.QUOTAS:
            raise errors.InvalidInput.at((name,), "is not a quota")
        if value is not None and not 0 <= value <= LIMIT_MAX:
            raise errors.InvalidInput.at((name,), f"must be from 0 to {LIMIT_MAX}, or null")
    with admission.guarded(db, actor_id) as session:
        request = {"quotas": {API_NAMES[name]: v for name, v in command.limits.items()}}
        namespace = namespace_cases.readable(
            session, actor_id, _ACTION, command.namespace_id, lock=True, request=request
        )
        change = policy.administer(session, actor_id, _ACTION, request)
        before = state.overrides(session, namespace.id)
        after = state.put(
            session,
            namespace.id,
            state.Counts(
                **{
                    name: command.limits[name] if name in command.limits else before.of(name)
                    for name in state.QUOTAS
                }
            ),
            updated_by=actor_id,
        )
        change.audit(
            "namespace",
            namespace.id,
            namespace.id,
            {
                "quotas": {API_NAMES[name]: after.of(name) for name in state.QUOTAS},
                "previousQuotas": {API_NAMES[name]: before.of(name) for name in state.QUOTAS},
            },
        )
        return _read(session, namespace.id, defaults)


def _read(session: Session, namespace_id: str, defaults: state.Counts) -> NamespaceQuotas:
    own = state.overrides(session, namespace_id)
    used = state.usage(session, namespace_id)

    def quota(name: str) -> Quota:
        override, default, usage = own.of(name), defaults.of(name), used.of(name)
        assert default is not None and usage is not None
        return Quota(
            limit=default if override is None else override,
            used=usage,
            overridden=override is not None,
        )

    return NamespaceQuotas(
        namespace_id=namespace_id, **{name: quota(name) for name in state.QUOTAS}
    )
