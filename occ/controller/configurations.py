"""Configuration use cases: create, read, list, update (bumping ``generation``), delete.

A change takes its command value (``CreateConfiguration``, ``UpdateConfiguration``,
``DeleteConfiguration``). Every mutation is one transaction: lock the Namespace row, authorize,
lock and change the Configuration row, audit. Configurations need no infrastructure, so no work
is enqueued. Documents are written and read through the selected Configuration Driver
(``store``: the row itself by default, or the development filesystem root), once the request is
authorized.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.controller import admission, contents, preconditions, quotas
from occ.drivers.configuration import ConfigurationDriver
from occ.drivers.configuration.database import DATABASE
from occ.foundation import errors, ids
from occ.state import configurations as state
from occ.state import keyset
from occ.state import quotas as quota_rows
from occ.state.db import Database

MAX_DOCUMENT_BYTES: Final = 64 * 1024


def version(configuration: state.Configuration) -> str | None:
    """The Configuration's version tag (its generation)."""
    return preconditions.tag(configuration.id, generation=configuration.generation)


ITEMS: Final = contents.Items(
    kind="configuration",
    noun="Configuration",
    get=state.get,
    list_in=state.list_in,
    referencing_agents=state.referencing_agents,
    delete_row=state.delete,
    version=version,
)


@dataclass(frozen=True, kw_only=True)
class CreateConfiguration:
    """A new Configuration of a Namespace: its name and native JSON document."""

    namespace_id: str
    name: str
    document: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class UpdateConfiguration:
    """A Configuration's new name and/or document (``None`` leaves one as it is), if it still
    has the generation ``if_match`` admits."""

    namespace_id: str
    configuration_id: str
    name: str | None = None
    document: Mapping[str, Any] | None = None
    if_match: preconditions.Expected | None = None


@dataclass(frozen=True, kw_only=True)
class DeleteConfiguration:
    """The deletion of a Configuration, if it still has the generation ``if_match`` admits."""

    namespace_id: str
    configuration_id: str
    if_match: preconditions.Expected | None = None


def create_configuration(
    db: Database,
    actor_id: str,
    command: CreateConfiguration,
    *,
    store: ConfigurationDriver = DATABASE,
    quota_defaults: quota_rows.Counts = quotas.UNSET,
) -> state.Configuration:
    """Admit a Configuration at generation 1 (``configuration:create`` on the Namespace).

    Raises:
        NotFound: no such live Namespace, or the caller may not read it (audited).
        InvalidInput: a bad ``name`` or a ``document`` too large.
        Forbidden: the caller may read the Namespace but not create here (audited).
        NamespaceNotReady: the Namespace is not ``ready``.
        QuotaExceeded: the Namespace holds its quota of Configurations
            (``occ.controller.quotas``).
        Conflict: the name is taken in the Namespace.
    """
    admission.require_id("namespace", command.namespace_id)
    name = admission.name(command.name, ("name",))
    document = dict(command.document)
    size = document_size(document, ("document",))
    request = {"name": name}
    with admission.guarded(db, actor_id) as session:
        namespace, change = ITEMS.admit_creation(session, actor_id, command.namespace_id, request)
        quotas.enforce(session, namespace.id, "configurations", quota_defaults)
        configuration_id = ids.new("configuration")
        configuration = state.insert(
            session,
            namespace_id=namespace.id,
            name=name,
            document=store.keep(namespace.id, configuration_id, 1, document),
            configuration_id=configuration_id,
        )
        change.audit(
            "configuration",
            configuration.id,
            namespace.id,
            {"name": name, "generation": configuration.generation, "documentBytes": size},
        )
        return dataclasses.replace(configuration, document=document)


def get_configuration(
    db: Database,
    actor_id: str,
    *,
    namespace_id: str,
    configuration_id: str,
    store: ConfigurationDriver = DATABASE,
) -> state.Configuration:
    """A Configuration (``configuration:read``).

    Raises:
        NotFound: no such Configuration in this live Namespace, or the caller may not read it
            (audited).
    """
    return loaded(store, ITEMS.read(db, actor_id, namespace_id, configuration_id))


def list_configurations(
    db: Database,
    actor_id: str,
    window: keyset.Window = keyset.EVERYTHING,
    *,
    namespace_id: str,
    store: ConfigurationDriver = DATABASE,
) -> keyset.Page[state.Configuration]:
    """The Namespace's Configurations the caller may read (``configuration:read`` per item),
    the page ``window`` asks for.

    Raises:
        NotFound: no such live Namespace, or the caller may read neither the Namespace, nor
            Configurations in it, nor any of its Configurations (audited).
    """
    page = ITEMS.page(db, actor_id, namespace_id, window)
    return keyset.Page((loaded(store, item) for item in page), page.next_after)


def update_configuration(
    db: Database,
    actor_id: str,
    command: UpdateConfiguration,
    *,
    store: ConfigurationDriver = DATABASE,
) -> state.Configuration:
    """Change the name and/or document; ``generation`` moves by exactly one.

    ``None`` leaves a field as it is; at least one must be given. Needs
    ``configuration:update`` on the Configuration. ``if_match`` is checked on the locked row.

    Raises:
        InvalidInput: nothing to change, or a bad ``name`` or a ``document`` too large.
        NotFound: no such Configuration in this live Namespace, or the caller may not read it
            (audited).
        Forbidden: the caller may read but not update it (audited).
        PreconditionFailed: ``if_match`` does not admit the current generation.
        NamespaceNotReady: the Namespace is not ``ready``.
        Conflict: the new name is taken in the Namespace.
    """
    ITEMS.require_ids(command.namespace_id, command.configuration_id)
    if command.name is None and command.document is None:
        raise errors.InvalidInput.at((), "give at least one of name and document")
    name = None if command.name is None else admission.name(command.name, ("name",))
    document = None if command.document is None else dict(command.document)
    size = None if document is None else document_size(document, ("document",))
    request = admission.present({"name": name})
    with admission.guarded(db, actor_id) as session:
        namespace, current, change = ITEMS.locked(
            session,
            actor_id,
            command.namespace_id,
            command.configuration_id,
            verb="update",
            if_match=command.if_match,
            request=request,
        )
        admission.require_ready(namespace.status)
        updated = state.update(
            session,
            namespace_id=namespace.id,
            configuration_id=current.id,
            expected_generation=current.generation,
            name=name,
            document=(
                None
                if document is None
                else store.keep(namespace.id, current.id, current.generation + 1, document)
            ),
        )
        if updated is None:  # the row lock makes this a backstop
            raise errors.Conflict("the Configuration changed concurrently; read it and retry")
        details: dict[str, Any] = {
            "name": updated.name,
            "generation": updated.generation,
            "previousGeneration": current.generation,
            "changed": [
                field
                for field, value in (("name", name), ("document", document))
                if value is not None
            ],
        }
        if updated.name != current.name:
            details["previousName"] = current.name
        if size is not None:
            details["documentBytes"] = size
        change.audit("configuration", updated.id, namespace.id, details)
        if document is not None:
            return dataclasses.replace(updated, document=document)
        return loaded(store, updated)


def delete_configuration(
    db: Database,
    actor_id: str,
    command: DeleteConfiguration,
    *,
    store: ConfigurationDriver = DATABASE,
) -> state.Configuration:
    """Remove a Configuration no Agent references (``configuration:delete``); the removed one.

    Allowed whatever the Namespace's status, so a Namespace can always be emptied.

    Raises:
        NotFound: no such Configuration in this live Namespace, or the caller may not read it
            (audited).
        Forbidden: the caller may read but not delete it (audited).
        PreconditionFailed: ``if_match`` does not admit the current generation.
        Conflict: an Agent references it.
    """
    removed = ITEMS.delete(
        db,
        actor_id,
        command.namespace_id,
        command.configuration_id,
        if_match=command.if_match,
        described=lambda current: {"name": current.name, "generation": current.generation},
    )
    store.forget(removed.namespace_id, removed.id)  # after the commit: revisions keep snapshots
    return removed


def loaded(store: ConfigurationDriver, configuration: state.Configuration) -> state.Configuration:
    """``configuration`` with its native document, read through ``store``."""
    document = store.load(configuration.namespace_id, configuration.id, configuration.document)
    return dataclasses.replace(configuration, document=document)


def document_size(document: Mapping[str, Any], path: errors.Path) -> int:
    """The size of a Configuration document serialized as compact UTF-8 JSON, or
    ``InvalidInput`` at ``path`` when it passes 64 KiB.

    The document is plain JSON already: the web layer's strict JSON input refuses
    non-finite numbers, NUL characters and lone surrogates before any use case runs.
    """
    size = len(
        json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    )
    if size > MAX_DOCUMENT_BYTES:
        raise errors.InvalidInput.at(
            path, f"must be at most {MAX_DOCUMENT_BYTES} bytes serialized as JSON"
        )
    return size
