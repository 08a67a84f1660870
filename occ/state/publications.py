"""Publications that end a running claim and record its pass's effect in one fenced statement.

A pass usually publishes in a transaction of several statements: the fenced queue transition
first, then the kind's state change and audit event. The hottest outcome, a Namespace found
ready, runs the named statement of ``sql/publications.sql`` instead, as a hot statement on an
autocommit connection (one round trip, one commit): the completion with its evidence, the
Namespace's ``provisioning`` -> ``ready`` compare-and-set and the lifecycle audit event. The
later parts read the fenced UPDATE's row, so a stale claim changes nothing and raises
``ClaimLost``; the rows written are the same as the transaction's. Never commits (the caller's
session does, or the connection autocommits).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from occ.foundation import codes, errors
from occ.state import hot_statements, queries, values

SQL: Final = queries.load("publications.sql")
HOT: Final = hot_statements.compile_all(SQL, "complete_namespace_ready")


def complete_namespace_ready(
    target: hot_statements.Target, claim: values.Claim, *, code: str, event: Mapping[str, Any]
) -> bool:
    """Complete a ``namespace_ready`` claim with ``code``, move its Namespace to ``ready`` and
    record ``event`` (``audit.parameters``) after the work's evidence; whether the Namespace
    was still ``provisioning`` (it moved). ``ClaimLost`` when the fence matched nothing."""
    codes.require(code, codes.Outcome.SUCCESS)
    params = {**event, "work_id": claim.work_id, "token": claim.token, "code": code}
    row = hot_statements.first(target, HOT["complete_namespace_ready"], params)
    if row is None:
        raise errors.ClaimLost(claim.work_id)
    return bool(row["transitioned"])
