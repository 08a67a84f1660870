"""Configuration use cases: create, read, list, update (bumping ``generation``), delete.

Every mutation is one transaction: lock the Namespace row, authorize, lock and change the
Configuration row, audit. Configurations need no infrastructure, so no work is enqueued.
Documents are written and read through the selected Configuration Driver (``store``: the row
itself by default, or the development filesystem root), once the request is authorized.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

from occ.controller import admission, contents, preconditions
from occ.drivers.configuration import ConfigurationDriver
from occ.drivers.configuration.database import DATABASE
from occ.foundation import errors, ids
from occ.state import configurations as state
from occ.state import keyset
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


def create_configuration(
    db: Database,
    *,
    actor_id: str,
    namespace_id: str,
    name: str,
    document: dict[str, Any],
    store: ConfigurationDriver = DATABASE,
) -> state.Configuration:
    """Admit a Configuration at generation 1 (``configuration:create`` on the Namespace).

    Raises:
        NotFound: no such live Namespace, or the caller may not read it (audited).
        InvalidInput: a bad ``/name`` or ``/document``.
        Forbidden: the caller may read the Namespace but not create here (audited).
        NamespaceNotReady: the Namespace is not ``ready``.
        Conflict: the name is taken in the Namespace.
    """
    admission.require_id("namespace", namespace_id)
    name = admission.name(name, "/name")
    size = check_document(document, "/document")
    request = {"name": name}
    with admission.guarded(db, actor_id) as session:
        namespace, change = ITEMS.admit_creation(session, actor_id, namespace_id, request)
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
    *,
    actor_id: str,
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
    *,
    actor_id: str,
    namespace_id: str,
    window: keyset.Window = keyset.EVERYTHING,
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
    *,
    actor_id: str,
    namespace_id: str,
    configuration_id: str,
    name: str | None = None,
    document: dict[str, Any] | None = None,
    if_match: preconditions.Expected | None = None,
    store: ConfigurationDriver = DATABASE,
) -> state.Configuration:
    """Change the name and/or document; ``generation`` moves by exactly one.

    ``None`` leaves a field as it is; at least one must be given. Needs
    ``configuration:update`` on the Configuration. ``if_match`` is checked on the locked row.

    Raises:
        InvalidInput: nothing to change, or a bad ``/name`` or ``/document``.
        NotFound: no such Configuration in this live Namespace, or the caller may not read it
            (audited).
        Forbidden: the caller may read but not update it (audited).
        PreconditionFailed: ``if_match`` does not admit the current generation.
        NamespaceNotReady: the Namespace is not ``ready``.
        Conflict: the new name is taken in the Namespace.
    """
    ITEMS.require_ids(namespace_id, configuration_id)
    if name is None and document is None:
        raise errors.InvalidInput.at("", "give at least one of name and document")
    if name is not None:
        name = admission.name(name, "/name")
    size = None if document is None else check_document(document, "/document")
    request = admission.present({"name": name})
    with admission.guarded(db, actor_id) as session:
        namespace, current, change = ITEMS.locked(
            session,
            actor_id,
            namespace_id,
            configuration_id,
            verb="update",
            if_match=if_match,
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
    *,
    actor_id: str,
    namespace_id: str,
    configuration_id: str,
    if_match: preconditions.Expected | None = None,
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
        namespace_id,
        configuration_id,
        if_match=if_match,
        described=lambda current: {"name": current.name, "generation": current.generation},
    )
    store.forget(removed.namespace_id, removed.id)  # after the commit: revisions keep snapshots
    return removed


def loaded(store: ConfigurationDriver, configuration: state.Configuration) -> state.Configuration:
    """``configuration`` with its native document, read through ``store``."""
    document = store.load(configuration.namespace_id, configuration.id, configuration.document)
    return dataclasses.replace(configuration, document=document)


def check_document(document: object, pointer: str) -> int:
    """The size of a Configuration document serialized as compact UTF-8 JSON, or
    ``InvalidInput`` at ``pointer``: a JSON object of at most 64 KiB with string keys, finite
    numbers and no NUL characters or lone surrogates (what the web layer already ensures;
    checked again for other callers)."""
    if not isinstance(document, dict):
        raise errors.InvalidInput.at(pointer, "must be a JSON object")
    try:
        # rejects NaN/Infinity, cycles, non-JSON values and lone surrogates (UnicodeError)
        encoded = json.dumps(
            document, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        raise errors.InvalidInput.at(
            pointer, "must be plain JSON (finite numbers, valid Unicode text)"
        ) from None
    if len(encoded) > MAX_DOCUMENT_BYTES:
        raise errors.InvalidInput.at(
            pointer, f"must be at most {MAX_DOCUMENT_BYTES} bytes serialized as JSON"
        )
    _check_value(document, pointer)
    return len(encoded)


def _check_value(value: object, pointer: str) -> None:
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, member in item.items():
                if not isinstance(key, str):
                    raise errors.InvalidInput.at(pointer, "object keys must be strings")
                _check_text(key, pointer)
                stack.append(member)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            _check_text(item, pointer)


def _check_text(text: str, pointer: str) -> None:
    if "\x00" in text:  # PostgreSQL's jsonb cannot hold it
        raise errors.InvalidInput.at(pointer, "strings must not contain NUL characters")
