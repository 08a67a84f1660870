"""``occ namespaces quotas``: read a Namespace's quotas, and (an administrator) set its own
limits. One API call each, plus the Namespace's name lookup."""

from __future__ import annotations

from typing import Any, Final

import click

from occ.client import session as shared

QUOTAS: Final = {
    "agents": "agents",
    "revisions-per-agent": "revisionsPerAgent",
    "secrets": "secrets",
    "configurations": "configurations",
}
"""Each quota's option name and API name."""
COLUMNS: Final = ("quota", "limit", "used", "overridden")


@click.group(cls=shared.ClientGroup)
def quotas() -> None:
    """A Namespace's quotas: Agents, revisions per Agent, Secrets, Configurations."""


def _limit(value: str | None) -> int | str | None:
    """An option's value: a number, ``default`` (the installation default), or unset."""
    if value is None or value == "default":
        return value
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter("must be a number or 'default'") from None


@quotas.command("get")
@click.argument("namespace")
@shared.output_option
@shared.pass_session
def get_quotas(session: shared.Session, namespace: str, form: str) -> None:
    """The Namespace's limits (id or name), what is used of each, and which are its own."""
    path = shared.path("namespaces", shared.namespace_id(session, namespace), "quotas")
    _show(session.get(path), form)


@quotas.command("set")
@click.argument("namespace")
@click.option("--agents", default=None, help="Agents it may hold ('default': the default).")
@click.option("--revisions-per-agent", default=None, help="Revisions each of its Agents may make.")
@click.option("--secrets", default=None, help="Secrets it may hold.")
@click.option("--configurations", default=None, help="Configurations it may hold.")
@shared.output_option
@shared.pass_session
def set_quotas(session: shared.Session, namespace: str, form: str, **limits: str | None) -> None:
    """Set the Namespace's own limits (needs installation:administer); the others stay."""
    body: dict[str, Any] = {}
    for option, value in limits.items():
        parsed = _limit(value)
        if parsed is not None:
            body[QUOTAS[option.replace("_", "-")]] = None if parsed == "default" else parsed
    if not body:
        raise click.UsageError("name at least one quota to set")
    path = shared.path("namespaces", shared.namespace_id(session, namespace), "quotas")
    _show(session.client.patch(path, body).data, form)


def _show(data: dict[str, Any], form: str) -> None:
    if form != "table":
        shared.show(data, form)
        return
    rows = [{"quota": option, **data[name]} for option, name in QUOTAS.items()]
    shared.show(rows, form, COLUMNS)
