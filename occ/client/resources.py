"""Client commands for Namespaces, Configurations and Secrets.

Each command is one or two API calls (plus name lookups); ``--wait`` on Namespace create and
delete polls the Namespace (and, when the caller may read it, its work item for the reason of a
failure). A Secret's value comes from a file or stdin, never from the command line, and is
never printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

import click

from occ.client import http, namespaced, states, waiting
from occ.client import session as shared

NAMESPACE_COLUMNS: Final = ("id", "name", "status", "createdAt")
CONFIGURATION_COLUMNS: Final = ("id", "name", "generation", "updatedAt")
SECRET_COLUMNS: Final = ("id", "name", "createdAt")
NAMESPACE: Final = shared.View("namespace", NAMESPACE_COLUMNS, ("existingNamespace", "updatedAt"))
CONFIGURATION: Final = shared.View(
    "configuration", CONFIGURATION_COLUMNS, ("namespaceId", "createdAt")
)
SECRET: Final = shared.View("secret", SECRET_COLUMNS, ("namespaceId", "updatedAt"))


# -- Namespaces ---------------------------------------------------------------------------------


@click.group(cls=shared.ClientGroup)
def namespaces() -> None:
    """Create, read and delete Namespaces."""


@namespaces.command("create")
@click.argument("name")
@click.option("--existing-namespace", default=None, help="Adopt this existing namespace.")
@shared.wait_options
@shared.output_option
@shared.pass_session
def create_namespace(
    session: shared.Session,
    *,
    name: str,
    existing_namespace: str | None,
    wait: bool,
    timeout: float,
    form: str,
) -> None:
    """Create a Namespace (provisioning; a worker makes it ready)."""
    body: dict[str, Any] = {"name": name}
    if existing_namespace is not None:
        body["existingNamespace"] = existing_namespace
    created = session.client.post(shared.path("namespaces"), body).data
    if session.profile.namespace is None:
        shared.hint(f"occ config set namespace {name}  (then -n may be left out)")
    shared.show_or_wait(
        created,
        lambda: _namespace_ready(session, created["id"]),
        wait=wait,
        label=f"namespace {created['id']}",
        timeout_s=timeout,
        form=form,
    )


@namespaces.command("list")
@shared.limit_option
@shared.output_option
@shared.watch_options
@shared.pass_session
def list_namespaces(
    session: shared.Session, limit: int | None, form: str, watch: bool, interval: float
) -> None:
    """The Namespaces you may read."""
    shared.show_or_watch(
        lambda: session.every(shared.path("namespaces"), limit=limit),
        form,
        NAMESPACE,
        watch=watch,
        interval=interval,
    )


@namespaces.command("get")
@click.argument("namespace")
@shared.output_option
@shared.watch_options
@shared.pass_session
def get_namespace(
    session: shared.Session, namespace: str, form: str, watch: bool, interval: float
) -> None:
    """One Namespace (id or name)."""
    item_path = shared.path("namespaces", shared.namespace_id(session, namespace))
    shared.show_or_watch(
        lambda: session.get(item_path), form, NAMESPACE, watch=watch, interval=interval
    )


@namespaces.command("delete")
@click.argument("namespace")
@shared.wait_options
@shared.output_option
@shared.pass_session
def delete_namespace(
    session: shared.Session, namespace: str, wait: bool, timeout: float, form: str
) -> None:
    """Delete an empty Namespace (deleting; a worker removes it)."""
    namespace_id = shared.namespace_id(session, namespace)
    accepted = session.client.delete(shared.path("namespaces", namespace_id)).data
    shared.show_or_wait(
        accepted,
        lambda: deletion(
            session, shared.path("namespaces", namespace_id), "namespace", namespace_id
        ),
        wait=wait,
        label=f"namespace {namespace_id}",
        timeout_s=timeout,
        form=form,
    )


def _namespace_ready(session: shared.Session, namespace_id: str) -> waiting.Observation:
    namespace = session.get(shared.path("namespaces", namespace_id))
    status = namespace["status"]
    if status == states.NamespaceStatus.READY:
        return waiting.Observation(status, ended=True, data=namespace)
    if status == states.NamespaceStatus.FAILED:
        return failed_work(session, f"namespace:{namespace_id}:reconcile:ready", status, namespace)
    return waiting.Observation(status, progress=_progress(session, namespace_id, "ready"))


def deletion(
    session: shared.Session, item_path: str, kind: str, resource_id: str
) -> waiting.Observation:
    """How the deletion of the ``kind`` resource at ``item_path`` goes: ended once it is gone,
    failed when its deletion work item (if the caller may read it) failed for good."""
    try:
        resource = session.get(item_path)
    except http.ApiError as error:
        if error.status == 404:
            return waiting.Observation("deleted", ended=True)
        raise
    work = readable_work(session, f"{kind}:{resource_id}:reconcile:deleted")
    if work is not None and work["state"] == states.WorkState.FAILED_PERMANENT:
        return waiting.Observation(
            resource["status"],
            ended=True,
            failed=True,
            code=work.get("reasonCode") or "FAILED",
            message=f"the deletion of {kind} {resource_id} failed (work {work['id']})",
        )
    progress = None if work is None else work.get("lastProgressCode")
    return waiting.Observation(resource["status"], progress=progress)


def _progress(session: shared.Session, namespace_id: str, goal: str) -> str | None:
    work = readable_work(session, f"namespace:{namespace_id}:reconcile:{goal}")
    return None if work is None else work.get("lastProgressCode")


def readable_work(session: shared.Session, work_id: str) -> dict[str, Any] | None:
    """The work item, or ``None`` when it does not exist or the caller may not read it."""
    try:
        item = session.get(shared.path("work", work_id))
    except http.ApiError as error:
        if error.status in (403, 404):
            return None
        raise
    return item if isinstance(item, dict) else None


def failed_work(
    session: shared.Session, work_id: str, state: str, data: Any
) -> waiting.Observation:
    """A failed operation, with its work item's reason code when the caller may read it."""
    work = readable_work(session, work_id)
    code = None if work is None else work.get("reasonCode")
    kind, target, _ = work_id.split(":", 2)
    return waiting.Observation(
        state,
        ended=True,
        failed=True,
        code=code or "FAILED",
        message=f"{kind} {target} is {state} (work {work_id})",
        data=data,
    )


# -- Configurations -----------------------------------------------------------------------------


@click.group(cls=shared.ClientGroup)
def configurations() -> None:
    """Create, read, update and delete a Namespace's Configurations."""


def _document(file: str) -> dict[str, Any]:
    """A Configuration document from a JSON or YAML file (``-``: stdin)."""
    import yaml  # noqa: PLC0415 - only a command that reads a document pays for it

    text = sys.stdin.read() if file == "-" else _read(file)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = "" if mark is None else f" at line {mark.line + 1}"
        shared.fail("INVALID_FILE", f"{file} is not JSON or YAML{where}")
    if not isinstance(document, dict):
        shared.fail("INVALID_FILE", f"{file} must hold a JSON or YAML object")
    # a JSON round trip refuses what the API could not take (dates, non-string keys)
    try:
        return dict(json.loads(json.dumps(document)))
    except (TypeError, ValueError):
        shared.fail("INVALID_FILE", f"{file} holds values JSON cannot carry")


def _read(file: str) -> str:
    try:
        return Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        shared.fail("INVALID_FILE", f"cannot read {file}: {type(error).__name__}")


@configurations.command("create")
@click.argument("name")
@shared.namespace_option
@click.option("--file", "file", required=True, help="JSON or YAML document ('-': stdin).")
@shared.output_option
@shared.pass_session
def create_configuration(
    session: shared.Session, name: str, namespace: str | None, file: str, form: str
) -> None:
    """Create a Configuration from a document."""
    body = {"name": name, "document": _document(file)}
    created = session.client.post(
        shared.collection_path(session, namespace, "configurations"), body
    )
    shared.show(created.data, form, CONFIGURATION)


namespaced.list_command(
    configurations,
    "configurations",
    CONFIGURATION,
    "The Namespace's Configurations you may read.",
)


namespaced.get_command(
    configurations,
    "configurations",
    CONFIGURATION,
    "One Configuration (id or name), with its document.",
)


@configurations.command("update")
@click.argument("configuration")
@shared.namespace_option
@click.option("--file", "file", default=None, help="The new document, whole ('-': stdin).")
@click.option("--name", "new_name", default=None, help="A new name.")
@shared.output_option
@shared.pass_session
def update_configuration(
    session: shared.Session,
    *,
    configuration: str,
    namespace: str | None,
    file: str | None,
    new_name: str | None,
    form: str,
) -> None:
    """Replace the document and/or rename (the generation goes up by one)."""
    body: dict[str, Any] = {}
    if file is not None:
        body["document"] = _document(file)
    if new_name is not None:
        body["name"] = new_name
    if not body:
        raise click.UsageError("give --file, --name or both")
    item_path = shared.member_path(session, namespace, "configurations", configuration)
    shared.show(session.client.patch(item_path, body).data, form, CONFIGURATION)


namespaced.delete_command(configurations, "configurations", "Delete a Configuration no Agent uses.")


# -- Secrets ------------------------------------------------------------------------------------


@click.group(cls=shared.ClientGroup)
def secrets() -> None:
    """Create, list and delete a Namespace's Secrets (values are write-only)."""


@secrets.command("create")
@click.argument("name")
@shared.namespace_option
@click.option("--from-file", "from_file", default=None, help="Read the value from this file.")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the value from stdin.")
@shared.output_option
@shared.pass_session
def create_secret(
    session: shared.Session,
    *,
    name: str,
    namespace: str | None,
    from_file: str | None,
    from_stdin: bool,
    form: str,
) -> None:
    """Create a Secret; one trailing newline of the value is dropped."""
    if (from_file is None) == (not from_stdin):
        raise click.UsageError("give exactly one of --from-file FILE and --stdin")
    text = sys.stdin.read() if from_stdin else _read(str(from_file))
    value = text[:-1] if text.endswith("\n") else text
    value = value[:-1] if value.endswith("\r") else value
    if not value:
        shared.fail("INVALID_FILE", "the Secret's value is empty")
    created = session.client.post(
        shared.collection_path(session, namespace, "secrets"), {"name": name, "value": value}
    )
    shared.show(created.data, form, SECRET)


namespaced.list_command(
    secrets, "secrets", SECRET, "The Namespace's Secrets you may read (metadata only)."
)


namespaced.delete_command(secrets, "secrets", "Delete a Secret no Agent uses.")
