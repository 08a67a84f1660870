"""What every client command shares: the API client from the profile, output, errors, names.

A command gets a ``Session`` (``pass_session``) holding the ``http.Client`` built from the
profile and the environment. Failures end as one line, ``occ: error: CODE: detail``, with exit
status 2 (``fail``); a ``--wait`` that ended badly exits 1, one that timed out 3 and one
stopped by Ctrl-C 130.
Namespaces, Configurations, Secrets and Agents may be named by id (the full ``ns_<uuid4>``
form; anything else, ``ns_prod`` too, is a name) or by name (looked up with the API's exact
``name`` filter); a list is read to its end, page after page.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import click

from occ.client import http, output, profile, waiting, wire
from occ.foundation import ids

F = TypeVar("F", bound=Callable[..., Any])
PAGE_SIZE = 500
"""Items per request when the client reads a whole list (the API's largest page)."""
_KIND_OF = {"configurations": "configuration", "secrets": "secret", "agents": "agent"}
"""The id kind (``occ.foundation.ids``) of a Namespace's collection's members."""
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
"""A click option or argument (or a stack of them) as one decorator."""


def fail(code: str, detail: str, exit_status: int = waiting.EXIT_ERROR) -> NoReturn:
    """End the command: ``occ: error: CODE: detail`` on stderr, then ``exit_status``."""
    click.echo(f"occ: error: {code}: {' '.join(detail.split())}", err=True)
    raise click.exceptions.Exit(exit_status)


class ClientGroup(click.Group):
    """A command group whose commands' API, profile and file errors end through ``fail``."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except http.ApiError as error:
            fail(error.code, error.message)
        except profile.ProfileError as error:
            fail(error.code, str(error))
        except OSError as error:
            fail("OS_ERROR", os_error(error))


def os_error(error: OSError) -> str:
    """An ``OSError`` in one line: its file (if any) and the system's reason."""
    reason = error.strerror or type(error).__name__
    return f"{error.filename}: {reason}" if error.filename is not None else reason


@dataclass(frozen=True)
class View:
    """How a kind of item prints: its ``-o name`` kind, its table's columns and the more
    columns of ``-o wide``."""

    kind: str
    columns: tuple[str, ...]
    wide: tuple[str, ...] = ()


@dataclass(frozen=True)
class Session:
    """The environment a command runs in; the profile and API client are read on first use."""

    environ: Mapping[str, str]

    @functools.cached_property
    def profile(self) -> profile.Profile:
        return profile.load(self.environ)

    @functools.cached_property
    def client(self) -> http.Client:
        via_proxy = wire.proxied(self.environ)
        return http.Client(self.profile.url, self.profile.key, via_proxy=via_proxy)

    def get(self, path: str, query: Mapping[str, object] | None = None) -> Any:
        return self.client.get(path, query).data

    def every(
        self, path: str, query: Mapping[str, object] | None = None, *, limit: int | None = None
    ) -> list[Any]:
        """The items of the list at ``path``, page after page to its end (at most ``limit``)."""
        items: list[Any] = []
        cursor: object = None
        while True:
            size = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit - len(items))
            answer = self.client.get(path, {**(query or {}), "limit": size, "cursor": cursor})
            if not isinstance(answer.data, list):
                raise http.ApiError("INVALID_RESPONSE", f"{path} did not answer a list")
            items.extend(answer.data)
            cursor = answer.meta.get("nextCursor")
            if cursor is None or (limit is not None and len(items) >= limit):
                return items


def session_of(ctx: click.Context) -> Session:
    """The command's session (one per ``occ`` invocation)."""
    root = ctx.find_root()
    if not isinstance(root.obj, Session):
        root.obj = Session(dict(os.environ))
    return root.obj


def pass_session(command: F) -> F:
    """Hand the command its ``Session`` as the first argument."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return command(session_of(click.get_current_context()), *args, **kwargs)

    return wrapper  # type: ignore[return-value]


output_option = click.option(
    "-o",
    "--output",
    "form",
    type=click.Choice(output.FORMATS),
    default="table",
    show_default=True,
    help="How to print the answer (wide: more columns; name: kind/name per item).",
)
limit_option = click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="Show at most this many (default: all, read page after page).",
)
namespace_option = click.option(
    "-n",
    "--namespace",
    "namespace",
    default=None,
    help="The Namespace (id or name); default: the profile's (occ config set namespace).",
)


def watch_options(command: F) -> F:
    """``-w/--watch`` and ``--interval`` for a get or a list."""
    command = click.option(
        "--interval",
        type=click.FloatRange(min=0.1),
        default=2.0,
        show_default=True,
        help="Seconds between two reads of --watch.",
    )(command)
    return click.option(
        "-w", "--watch", is_flag=True, help="Then print what changes, until Ctrl-C."
    )(command)


def wait_options(command: F) -> F:
    """``--wait`` and ``--timeout`` for an asynchronous command."""
    command = click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=waiting.DEFAULT_TIMEOUT_S,
        show_default=True,
        help="Seconds --wait waits before giving up (exit 3).",
    )(command)
    return click.option(
        "--wait", is_flag=True, help="Wait until it settles (exit 0 done, 1 failed, 3 timeout)."
    )(command)


def show(data: Any, form: str, columns: tuple[str, ...] | View = ()) -> None:
    """Print ``data`` on stdout as ``form`` (a list as the ``View``'s table, or ``columns``)."""
    if isinstance(columns, View):
        text = output.render(data, form, columns.columns, wide=columns.wide, kind=columns.kind)
    else:
        text = output.render(data, form, columns)
    click.echo(text)


def hint(command: str) -> None:
    """A next step, on stderr: ``next: COMMAND``."""
    click.echo(f"next: {command}", err=True)


def show_or_watch(
    read: Callable[[], Any], form: str, view: View, *, watch: bool, interval: float
) -> None:
    """Print what ``read`` answers; with ``--watch``, then each item that changed (and a line
    on stderr for each one gone) every ``interval`` seconds, until Ctrl-C. A read refused for
    now (429, 503) or unanswered is tried again, after the ``Retry-After`` asked."""
    shown = read()
    show(shown, form, view)
    if not watch:
        return
    seen = _by_key(shown)
    pause = interval
    try:
        while True:
            sys.stdout.flush()
            time.sleep(pause)
            pause = interval
            try:
                current = read()
            except http.ApiError as error:
                if error.transient:
                    pause = max(interval, error.retry_after_s or 0.0)
                    continue
                if error.status != 404 or isinstance(shown, list):
                    raise
                click.echo(f"{output.name_of(shown, view.kind)} deleted", err=True)
                raise click.exceptions.Exit(waiting.EXIT_OK) from None
            now = _by_key(current)
            changed = [item for key, item in now.items() if seen.get(key) != item]
            for key in seen.keys() - now.keys():
                click.echo(f"{output.name_of(seen[key], view.kind)} deleted", err=True)
            if changed:
                _show_changes(changed, form, view)
            seen = now
    except KeyboardInterrupt:
        raise click.exceptions.Exit(waiting.EXIT_OK) from None


def _by_key(data: Any) -> dict[str, Any]:
    items = data if isinstance(data, list) else [data]
    return {str(item.get("id")) if isinstance(item, dict) else str(item): item for item in items}


def _show_changes(items: list[Any], form: str, view: View) -> None:
    """Changed items: table rows without the header, one JSON line or YAML document each."""
    if form in ("table", "wide"):
        columns = view.columns if form == "table" else (*view.columns, *view.wide)
        click.echo("\n".join(output.table(items, columns).splitlines()[1:]))
    elif form == "json":
        for item in items:
            click.echo(json.dumps(item, separators=(",", ":")))
    elif form == "yaml":
        for item in items:
            click.echo("---\n" + output.render(item, "yaml"))
    else:
        show(items, form, view)


def show_or_wait(
    accepted: Any,
    observe: Callable[[], waiting.Observation],
    *,
    wait: bool,
    label: str,
    timeout_s: float,
    form: str,
) -> None:
    """Show what the API ``accepted``; with ``--wait``, ``run_wait`` on ``observe`` instead."""
    if not wait:
        show(accepted, form)
        return
    run_wait(observe, label=label, timeout_s=timeout_s, form=form)


def run_wait(
    observe: Callable[[], waiting.Observation], *, label: str, timeout_s: float, form: str
) -> NoReturn:
    """Wait with live progress on stderr, print the end, and exit with the wait's status."""
    stream = sys.stderr
    outcome = waiting.wait(
        observe,
        timeout_s=timeout_s,
        progress=waiting.Progress(stream, terminal=stream.isatty(), label=label),
    )
    last = outcome.last
    if outcome.exit_status in (waiting.EXIT_TIMEOUT, waiting.EXIT_INTERRUPTED):
        ended = "TIMEOUT" if outcome.exit_status == waiting.EXIT_TIMEOUT else "INTERRUPTED"
        fail(
            ended,
            f"{label} is still {last.state} after {outcome.elapsed_s:.1f} s (the wait stopped, "
            "not the operation)",
            outcome.exit_status,
        )
    if last.data is not None:
        show(last.data, form)
    if outcome.exit_status == waiting.EXIT_FAILED:
        fail(
            last.code or "FAILED",
            last.message or f"{label} ended {last.state}",
            waiting.EXIT_FAILED,
        )
    raise click.exceptions.Exit(waiting.EXIT_OK)


def path(*segments: str) -> str:
    """An API path from segments (each quoted)."""
    return "/v1/" + "/".join(http.quote(segment) for segment in segments)


def namespace_id(session: Session, reference: str | None) -> str:
    """The id of the Namespace named or identified by ``reference`` (``None``: the profile's
    default Namespace)."""
    if reference is None:
        reference = session.profile.namespace
        if reference is None:
            raise click.UsageError(
                "which Namespace? give -n NAMESPACE, or set a default: "
                "occ config set namespace NAME"
            )
    if ids.is_valid("namespace", reference):
        return reference
    return _by_name(session, path("namespaces"), reference, "namespace")


def member_id(session: Session, namespace: str, collection: str, reference: str) -> str:
    """The id of a Namespace's Configuration, Secret or Agent named or identified by
    ``reference``."""
    if ids.is_valid(_KIND_OF[collection], reference):
        return reference
    return _by_name(
        session, path("namespaces", namespace, collection), reference, collection.rstrip("s")
    )


def collection_path(session: Session, namespace: str | None, collection: str) -> str:
    """The path of a collection of the Namespace named or identified by ``namespace``."""
    return path("namespaces", namespace_id(session, namespace), collection)


def member_path(session: Session, namespace: str | None, collection: str, reference: str) -> str:
    """The path of the member of a Namespace's collection that ``reference`` names or
    identifies."""
    in_namespace = namespace_id(session, namespace)
    item_id = member_id(session, in_namespace, collection, reference)
    return path("namespaces", in_namespace, collection, item_id)


def _by_name(session: Session, list_path: str, name: str, kind: str) -> str:
    """The id of the item named ``name`` in the list at ``list_path`` (the API filters by
    exact name, however long the list)."""
    try:
        items = session.get(list_path, {"name": name, "limit": 1})
    except http.ApiError as error:
        if error.status != 404:
            raise
        items = []  # the parent hides an empty page from a caller who may not read it
    matches = [item["id"] for item in items if isinstance(item, dict) and item.get("name") == name]
    if not matches:
        fail(
            "NOT_FOUND", f"no {kind} named {name!r} that you may read (list them: occ {kind}s list)"
        )
    return str(matches[0])
