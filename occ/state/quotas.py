"""Namespace quotas in the database: an administrator's overrides (``namespace_quotas``), what a
Namespace uses of each quota, and the lock that makes a create's count race-safe.

Takes the caller's session and never commits. The statements are in ``sql/quotas.sql``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sqlalchemy import orm

from occ.state import queries

QUOTAS: Final = ("agents", "revisions_per_agent", "secrets", "configurations")
"""Every quota, named like its column."""


@dataclass(frozen=True, kw_only=True)
class Counts:
    """One number per quota: limits, overrides (``None``: the default) or usage."""

    agents: int | None = None
    revisions_per_agent: int | None = None
    secrets: int | None = None
    configurations: int | None = None

    def of(self, quota: str) -> int | None:
        if quota not in QUOTAS:
            raise ValueError(f"unknown quota {quota!r}")
        value: int | None = getattr(self, quota)
        return value


def lock(session: orm.Session, namespace_id: str, quota: str) -> None:
    """Hold the Namespace's ``quota`` until the transaction ends: creates that count against
    it then count one after another, each seeing the ones before it."""
    session.execute(queries.load("quotas.sql")["lock_quota"], _named(namespace_id, quota))


def usage(session: orm.Session, namespace_id: str) -> Counts:
    """What the Namespace uses of each quota now."""
    row = (
        session.execute(queries.load("quotas.sql")["usage"], {"namespace_id": namespace_id})
        .mappings()
        .one()
    )
    return Counts(**{name: int(row[name]) for name in QUOTAS})


def revisions_made(session: orm.Session, agent_id: str) -> int:
    """How many revisions the Agent has made (0 when it is gone)."""
    made = session.execute(
        queries.load("quotas.sql")["revisions_made"], {"agent_id": agent_id}
    ).scalar()
    return int(made or 0)


def overrides(session: orm.Session, namespace_id: str) -> Counts:
    """The Namespace's overrides (all ``None`` when an administrator set none)."""
    row = (
        session.execute(queries.load("quotas.sql")["overrides"], {"namespace_id": namespace_id})
        .mappings()
        .first()
    )
    return Counts() if row is None else Counts(**{name: row[name] for name in QUOTAS})


def put(session: orm.Session, namespace_id: str, values: Counts, *, updated_by: str) -> Counts:
    """Set the Namespace's overrides to ``values`` (``None``: the default)."""
    parameters = {name: values.of(name) for name in QUOTAS}
    row = (
        session.execute(
            queries.load("quotas.sql")["put_overrides"],
            {**parameters, "namespace_id": namespace_id, "updated_by": updated_by},
        )
        .mappings()
        .one()
    )
    return Counts(**{name: row[name] for name in QUOTAS})


def _named(namespace_id: str, quota: str) -> dict[str, str]:
    if quota not in QUOTAS:
        raise ValueError(f"unknown quota {quota!r}")
    return {"namespace_id": namespace_id, "quota": quota}
