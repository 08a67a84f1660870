"""The commands every collection of a Namespace has alike: list, get and delete.

A Namespace's Agents, Configurations and Secrets are listed, read and deleted the same way:
the Namespace and the member are named by id or by name, and the answer is printed. Each
function adds one such command to the collection's group, with the help it is given.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from occ.client import session as shared


def _singular(collection: str) -> str:
    return collection.removesuffix("s")


def list_command(
    group: click.Group, collection: str, view: shared.View, summary: str
) -> click.Command:
    """``list``: the collection's members, as the ``view``'s table by default."""

    @group.command("list", help=summary)
    @shared.namespace_option
    @shared.limit_option
    @shared.output_option
    @shared.watch_options
    @shared.pass_session
    def list_members(
        session: shared.Session,
        *,
        namespace: str | None,
        limit: int | None,
        form: str,
        watch: bool,
        interval: float,
    ) -> None:
        list_path = shared.collection_path(session, namespace, collection)
        shared.show_or_watch(
            lambda: session.every(list_path, limit=limit),
            form,
            view,
            watch=watch,
            interval=interval,
        )

    return list_members


def get_command(
    group: click.Group, collection: str, view: shared.View, summary: str
) -> click.Command:
    """``get MEMBER``: one member, by id or name."""

    def get_member(
        session: shared.Session,
        *,
        reference: str,
        namespace: str | None,
        form: str,
        watch: bool,
        interval: float,
    ) -> None:
        item_path = shared.member_path(session, namespace, collection, reference)
        shared.show_or_watch(
            lambda: session.get(item_path), form, view, watch=watch, interval=interval
        )

    return _member_command(
        group, "get", collection, summary, shared.output_option, shared.watch_options
    )(get_member)


def delete_command(group: click.Group, collection: str, summary: str) -> click.Command:
    """``delete MEMBER``: delete one member, by id or name, and say so."""

    def delete_member(session: shared.Session, reference: str, namespace: str | None) -> None:
        namespace_id = shared.namespace_id(session, namespace)
        item_id = shared.member_id(session, namespace_id, collection, reference)
        session.client.delete(shared.path("namespaces", namespace_id, collection, item_id))
        click.echo(f"deleted {_singular(collection)} {item_id}")

    return _member_command(group, "delete", collection, summary)(delete_member)


def _member_command(
    group: click.Group, name: str, collection: str, summary: str, *options: shared.Decorator
) -> Callable[[Callable[..., None]], click.Command]:
    """``group``'s command ``name``: a member (by id or name), ``--namespace``, then
    ``options``; the callback is handed its Session."""
    member = click.argument("reference", metavar=_singular(collection).upper())

    def declare(callback: Callable[..., None]) -> click.Command:
        declared = shared.pass_session(callback)
        for option in (*reversed(options), shared.namespace_option, member):
            declared = option(declared)
        return group.command(name, help=summary)(declared)

    return declare
