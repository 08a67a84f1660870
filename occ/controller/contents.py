"""What the Configuration and Secret use cases share: one ``Items`` value per kind admits a new
item into a Namespace, reads one item of a live Namespace, lists the page of its items the
caller may read, locks an item for a change, and deletes one no Agent references.

``Items.kind`` names the item (``configuration``, ``secret``): the permissions are
``<kind>:<verb>``, the audited actions ``<kind>s.<verb>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from occ import iam
from occ.controller import admission, changes, listing, namespaces, preconditions
from occ.foundation import errors
from occ.state import keyset
from occ.state import namespaces as namespace_rows
from occ.state.db import Database, Session


class Item(Protocol):
    """A Namespace item row: what the shared use cases read of it."""

    @property
    def id(self) -> str: ...

    @property
    def namespace_id(self) -> str: ...


T = TypeVar("T", bound=Item)
T_co = TypeVar("T_co", bound=Item, covariant=True)


class Getter(Protocol[T_co]):
    """The state function finding a Namespace's item (``lock`` takes its row lock)."""

    def __call__(
        self, session: Session, namespace_id: str, item_id: str, /, *, lock: bool = False
    ) -> T_co | None: ...


@dataclass(frozen=True, kw_only=True)
class Items(Generic[T]):
    """One kind of Namespace item and the state functions that keep its rows."""

    kind: str
    noun: str
    """What a conflict message calls the item (``Configuration``)."""
    get: Getter[T]
    list_in: Callable[[Session, str, keyset.Window], Sequence[T]]
    version: Callable[[T], str | None]
    """The item's version tag, which ``if_match`` is checked against."""
    referencing_agents: Callable[[Session, str, str], list[str]] | None = None
    delete_row: Callable[[Session, str, str], bool] | None = None
    """How an item is deleted (``None``: items of this kind are never deleted through occ)."""

    def resource(self, item: T) -> iam.Resource:
        """What permissions on the item are checked on."""
        return iam.Resource(self.kind, item.id, item.namespace_id)

    def admit_creation(
        self, session: Session, actor_id: str, namespace_id: str, request: Mapping[str, Any]
    ) -> tuple[namespace_rows.Namespace, changes.Change]:
        """The live Namespace a new item goes into, under its row lock, and the change
        ``<kind>:create`` on it allows.

        Raises:
            NotFound: no such live Namespace, or the caller may not read it (audited).
            Forbidden: the caller may read the Namespace but not create here (audited).
            NamespaceNotReady: the Namespace is not ``ready``.
        """
        namespace = namespaces.live(session, namespace_id, lock=True)
        change = self._require(
            session, actor_id, "create", iam.Resource.namespace(namespace.id), request
        )
        admission.require_ready(namespace.status)
        return namespace, change

    def read(self, db: Database, actor_id: str, namespace_id: str, item_id: str) -> T:
        """The Namespace's item, if the caller holds ``<kind>:read`` on it.

        Raises:
            NotFound: no such item in this live Namespace, or the caller may not read it
                (audited).
        """
        self.require_ids(namespace_id, item_id)
        with admission.guarded(db, actor_id, read_only=True) as session:
            namespace = namespaces.live(session, namespace_id)
            item = admission.found(self.get(session, namespace.id, item_id), self.kind)
            self._require(session, actor_id, "read", self.resource(item))
            return item

    def page(
        self, db: Database, actor_id: str, namespace_id: str, window: keyset.Window
    ) -> keyset.Page[T]:
        """The page ``window`` asks for of the Namespace's items the caller holds
        ``<kind>:read`` on, in creation order.

        An empty page needs ``namespace:read`` or ``<kind>:read`` on the Namespace itself.

        Raises:
            NotFound: no such live Namespace, or the caller may read neither it, nor such items
                in it, nor any of its items (audited).
        """
        admission.require_id("namespace", namespace_id)
        permission = f"{self.kind}:read"
        with admission.guarded(db, actor_id, read_only=True) as session:
            namespace = namespaces.live(session, namespace_id)
            visible = listing.readable_page(
                session,
                actor_id,
                permission,
                resource_of=self.resource,
                read=lambda rows: self.list_in(session, namespace.id, rows),
                window=window,
            )
            if not visible:
                parent = iam.Resource.namespace(namespace.id)
                if not iam.authorize(session, actor_id, "namespace:read", parent).allowed:
                    self._require(session, actor_id, "list", parent, permission=permission)
            return visible

    def locked(
        self,
        session: Session,
        actor_id: str,
        namespace_id: str,
        item_id: str,
        *,
        verb: str,
        if_match: preconditions.Expected | None,
        request: Mapping[str, Any] | None = None,
    ) -> tuple[namespace_rows.Namespace, T, changes.Change]:
        """The live Namespace (row-locked), its item (row-locked) and the change
        ``<kind>:<verb>`` on the item allows, once ``if_match`` admitted the item's version.

        Raises:
            NotFound: no such item in this live Namespace, or the caller may not read it
                (audited).
            Forbidden: the caller may read but not ``verb`` it (audited).
            PreconditionFailed: ``if_match`` does not admit the item's version.
        """
        namespace = namespaces.live(session, namespace_id, lock=True)
        item = admission.found(self.get(session, namespace.id, item_id, lock=True), self.kind)
        change = self._require(session, actor_id, verb, self.resource(item), request)
        preconditions.check(if_match, self.version(item))
        return namespace, item, change

    def delete(
        self,
        db: Database,
        actor_id: str,
        namespace_id: str,
        item_id: str,
        *,
        if_match: preconditions.Expected | None,
        described: Callable[[T], Mapping[str, Any]],
    ) -> T:
        """Remove an item no Agent references (``<kind>:delete``), whatever the Namespace's
        status; the removed one, audited with what ``described`` says of it.

        Raises:
            NotFound: no such item in this live Namespace, or the caller may not read it
                (audited).
            Forbidden: the caller may read but not delete it (audited).
            PreconditionFailed: ``if_match`` does not admit the item's version.
            Conflict: an Agent references it.
        """
        assert self.referencing_agents is not None and self.delete_row is not None
        self.require_ids(namespace_id, item_id)
        with admission.guarded(db, actor_id) as session:
            namespace, current, change = self.locked(
                session, actor_id, namespace_id, item_id, verb="delete", if_match=if_match
            )
            agents = self.referencing_agents(session, namespace.id, current.id)
            if agents:
                raise errors.Conflict(f"the {self.noun} is used by agent(s) {', '.join(agents)}")
            if not self.delete_row(session, namespace.id, current.id):
                raise errors.NotFound(f"the {self.kind} does not exist")
            change.audit(self.kind, current.id, namespace.id, described(current))
            return current

    def require_ids(self, namespace_id: str, item_id: str) -> None:
        """Malformed path ids answer ``NotFound`` before any query."""
        admission.require_id("namespace", namespace_id)
        admission.require_id(self.kind, item_id)

    def _require(
        self,
        session: Session,
        actor_id: str,
        verb: str,
        resource: iam.Resource,
        request: Mapping[str, Any] | None = None,
        *,
        permission: str | None = None,
    ) -> changes.Change:
        """The change ``permission`` (``<kind>:<verb>``) on ``resource`` allows the action
        ``<kind>s.<verb>`` to make; hidden (404) when the caller may not even read."""
        return admission.permitted_verb(
            session, actor_id, self.kind, verb, resource, permission=permission, request=request
        )
