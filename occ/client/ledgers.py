"""``occ work`` and ``occ audit``: the operator's paged views of the work queue and audit log.

A list prints one page (``--limit`` items, the API's 100 by default) and, when more follow, the
command that reads the next one on stderr (``next: occ work list --state queued --cursor C``),
whatever ``-o`` is: it repeats the filters, to which the work list's cursor is bound. ``--all``
reads page after page to the end instead.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any, Final

import click

from occ.client import http, states
from occ.client import session as shared

WORK: Final = shared.View("work", ("id", "state", "reasonCode", "attemptCount", "createdAt"))
AUDIT: Final = shared.View(
    "auditevent", ("sequence", "occurredAt", "kind", "action", "outcome", "resourceId")
)

page_size_option = click.option(
    "--limit",
    type=click.IntRange(1, 500),
    default=None,
    help="Items per page (the API's default: 100).",
)
all_option = click.option(
    "--all", "every", is_flag=True, help="Read every page to the end (not only one)."
)


@click.group(cls=shared.ClientGroup)
def work() -> None:
    """Read the work queue (needs installation:administer)."""


@work.command("list")
@click.option("--state", type=click.Choice([state.value for state in states.WorkState]))
@click.option("-n", "--namespace", default=None, help="Only this Namespace's (id or name).")
@click.option("--agent", default=None, help="Only this Agent's (id).")
@page_size_option
@click.option("--cursor", default=None, help="The previous page's nextCursor.")
@all_option
@shared.output_option
@shared.pass_session
def list_work(
    session: shared.Session,
    *,
    state: str | None,
    namespace: str | None,
    agent: str | None,
    limit: int | None,
    cursor: str | None,
    every: bool,
    form: str,
) -> None:
    """Work items, newest first (one page; --all: every page)."""
    filters = {"--state": state, "--namespace": namespace, "--agent": agent, "--limit": limit}
    query = {
        "state": state,
        "namespaceId": None if namespace is None else shared.namespace_id(session, namespace),
        "agentId": agent,
        "limit": limit,
    }
    items, following = _read(
        session, shared.path("work"), query, ("cursor", "nextCursor"), cursor, every=every
    )
    shared.show(items, form, WORK)
    _hint_next("occ work list", filters, "--cursor", following)


@work.command("get")
@click.argument("work_id")
@shared.output_option
@shared.pass_session
def get_work(session: shared.Session, *, work_id: str, form: str) -> None:
    """One work item by its id (kind:target:...)."""
    shared.show(session.get(shared.path("work", work_id)), form, WORK)


@click.group(cls=shared.ClientGroup)
def audit() -> None:
    """Read the audit log (needs installation:read)."""


@audit.command("list")
@click.option("-n", "--namespace", default=None, help="Only this Namespace's (id or name).")
@click.option("--resource", "resource_id", default=None, help="Only events about this id.")
@click.option("--work", "work_id", default=None, help="Only events of this work item.")
@click.option(
    "--kind", type=click.Choice(("bootstrap", "mutation", "access", "authorization_denial"))
)
@click.option("--before", type=click.IntRange(min=1), default=None, help="A nextBefore.")
@page_size_option
@all_option
@shared.output_option
@shared.pass_session
def list_audit(
    session: shared.Session,
    *,
    namespace: str | None,
    resource_id: str | None,
    work_id: str | None,
    kind: str | None,
    before: int | None,
    limit: int | None,
    every: bool,
    form: str,
) -> None:
    """Audit events, newest first (one page; --all: every page)."""
    filters = {
        "--namespace": namespace,
        "--resource": resource_id,
        "--work": work_id,
        "--kind": kind,
        "--limit": limit,
    }
    query = {
        "namespaceId": None if namespace is None else shared.namespace_id(session, namespace),
        "resourceId": resource_id,
        "workId": work_id,
        "kind": kind,
        "limit": limit,
    }
    items, following = _read(
        session, shared.path("audit-events"), query, ("before", "nextBefore"), before, every=every
    )
    shared.show(items, form, AUDIT)
    _hint_next("occ audit list", filters, "--before", following)


def _read(
    session: shared.Session,
    list_path: str,
    query: Mapping[str, object],
    names: tuple[str, str],
    start: object,
    *,
    every: bool,
) -> tuple[list[Any], object]:
    """One page of the list at ``list_path`` from ``start`` (``every``: each page to the end)
    and where the next page starts (``None``: at the end). ``names``: the query parameter
    that pages and the ``meta`` field that tells the next page."""
    parameter, next_field = names
    items: list[Any] = []
    position = start
    while True:
        answer = session.client.get(list_path, {**query, parameter: position})
        if not isinstance(answer.data, list):
            raise http.ApiError("INVALID_RESPONSE", f"{list_path} did not answer a list")
        items.extend(answer.data)
        position = answer.meta.get(next_field)
        if position is None or not every:
            return items, position


def _hint_next(command: str, filters: Mapping[str, object], flag: str, following: object) -> None:
    """On stderr, the command that reads the next page (nothing after the last one)."""
    if following is None:
        return
    given = [f"{name} {shlex.quote(str(value))}" for name, value in filters.items() if value]
    shared.hint(" ".join([command, *given, flag, shlex.quote(str(following))]))
