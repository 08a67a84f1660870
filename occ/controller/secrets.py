"""Secret use cases: create (value kept by the Secret Driver), read and list metadata, delete.

The value is write-only: the selected Secret Driver (``store``) keeps it once the creation is
authorized, inside the transaction (a creation that then fails removes what it kept), and it is
never returned, logged, audited or put in an error message (nor in its command's ``repr``). A
change takes its command value (``CreateSecret``, ``DeleteSecret``). Every mutation is one
transaction: lock the Namespace row, authorize, change the Secret row, audit. No work is
enqueued; a deleted Secret's value is removed from the driver after the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from occ.controller import admission, contents, preconditions, quotas
from occ.drivers.secret import SecretDriver
from occ.foundation import errors, ids
from occ.state import keyset
from occ.state import quotas as quota_rows
from occ.state import secrets as state
from occ.state.db import Database

MAX_VALUE_BYTES: Final = 64 * 1024

ITEMS: Final = contents.Items(
    kind="secret",
    noun="Secret",
    get=state.get,
    list_in=state.list_in,
    referencing_agents=state.referencing_agents,
    delete_row=state.delete,
    version=lambda secret: preconditions.tag(secret.id, updated_at=secret.updated_at),
)


@dataclass(frozen=True, kw_only=True)
class CreateSecret:
    """A new Secret of a Namespace: its name and value (never shown by ``repr``)."""

    namespace_id: str
    name: str
    value: str = field(repr=False)


@dataclass(frozen=True, kw_only=True)
class DeleteSecret:
    """The deletion of a Secret, if it still has the version ``if_match`` admits."""

    namespace_id: str
    secret_id: str
    if_match: preconditions.Expected | None = None


def create_secret(
    db: Database,
    actor_id: str,
    command: CreateSecret,
    *,
    store: SecretDriver,
    quota_defaults: quota_rows.Counts = quotas.UNSET,
) -> state.Secret:
    """Admit a Secret (``secret:create`` on the Namespace); ``store`` keeps its value.

    Raises:
        NotFound: no such live Namespace, or the caller may not read it (audited).
        InvalidInput: a bad ``name`` or ``value`` (the message never repeats the value).
        Forbidden: the caller may read the Namespace but not create here (audited).
        NamespaceNotReady: the Namespace is not ``ready``.
        QuotaExceeded: the Namespace holds its quota of Secrets (``occ.controller.quotas``).
        Conflict: the name is taken in the Namespace.
    """
    admission.require_id("namespace", command.namespace_id)
    name = admission.name(command.name, ("name",))
    check_value(command.value, ("value",))
    secret_id = ids.new("secret")
    request = {"name": name}
    kept = False
    try:
        with admission.guarded(db, actor_id) as session:
            namespace, change = ITEMS.admit_creation(
                session, actor_id, command.namespace_id, request
            )
            quotas.enforce(session, namespace.id, "secrets", quota_defaults)
            sealed = store.seal(namespace.id, secret_id, command.value)
            kept = True
            secret = state.insert(
                session,
                secret_id=secret_id,
                namespace_id=namespace.id,
                name=name,
                value_ciphertext=sealed,
            )
            change.audit("secret", secret.id, namespace.id, {"name": name})
    except BaseException:
        if kept:  # nothing committed names it: the value must not outlive the failure
            store.remove(command.namespace_id, secret_id)
        raise
    return secret


def get_secret(db: Database, actor_id: str, *, namespace_id: str, secret_id: str) -> state.Secret:
    """A Secret's metadata (``secret:read``).

    Raises:
        NotFound: no such Secret in this live Namespace, or the caller may not read it
            (audited).
    """
    return ITEMS.read(db, actor_id, namespace_id, secret_id)


def list_secrets(
    db: Database, actor_id: str, window: keyset.Window = keyset.EVERYTHING, *, namespace_id: str
) -> keyset.Page[state.Secret]:
    """The Namespace's Secrets the caller may read (``secret:read`` per item), metadata only,
    the page ``window`` asks for.

    Raises:
        NotFound: no such live Namespace, or the caller may read neither the Namespace, nor
            Secrets in it, nor any of its Secrets (audited).
    """
    return ITEMS.page(db, actor_id, namespace_id, window)


def delete_secret(
    db: Database, actor_id: str, command: DeleteSecret, *, store: SecretDriver | None = None
) -> state.Secret:
    """Remove a Secret no Agent references (``secret:delete``); the removed one's metadata.

    Allowed whatever the Namespace's status, so a Namespace can always be emptied.

    Raises:
        NotFound: no such Secret in this live Namespace, or the caller may not read it
            (audited).
        Forbidden: the caller may read but not delete it (audited).
        PreconditionFailed: ``if_match`` does not admit the locked Secret's version.
        Conflict: an Agent's harness authentication references it.
    """
    removed = ITEMS.delete(
        db,
        actor_id,
        command.namespace_id,
        command.secret_id,
        if_match=command.if_match,
        described=lambda current: {"name": current.name},
    )
    if store is not None:  # after the commit: nothing refers to the value any more
        store.remove(removed.namespace_id, removed.id)
    return removed


def check_value(value: str, path: errors.Path) -> None:
    """A Secret value is 1 to 64 KiB of UTF-8 (valid Unicode text: the web layer's strict JSON
    input refuses lone surrogates); errors never repeat it."""
    size = len(value.encode("utf-8"))
    if not 1 <= size <= MAX_VALUE_BYTES:
        raise errors.InvalidInput.at(path, f"must be 1 to {MAX_VALUE_BYTES} bytes long (UTF-8)")
