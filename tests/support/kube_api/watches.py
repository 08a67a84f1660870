"""Watches as the apiserver serves them: the events of one collection from a resourceVersion.

Models ``?watch=true`` on a collection: without a resourceVersion (or ``0``) the stream opens
with an ``ADDED`` event per current object, else it replays every change after the given
version; a version older than the history keeps answers one ``ERROR`` event holding a 410
``Expired`` Status (the stream itself is a 200, as the real watch cache answers). Selectors
apply to each change as the watch cache applies them: an object that starts matching is
``ADDED``, one that stops matching is ``DELETED``. ``allowWatchBookmarks`` adds ``BOOKMARK``
events (only the resourceVersion) every ``bookmark_interval_s`` if set and just before
``timeoutSeconds`` ends the stream; metadata-only watches get ``PartialObjectMetadata``. It
yields events and must not write HTTP: the server frames them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from tests.support.kube_api import errors, history, listing, resources, store

Obj = resources.Obj

DEFAULT_TIMEOUT_S: Final = 1800.0
"""A watch without ``timeoutSeconds`` ends after this long (the apiserver's minimum)."""
_POLL_S: Final = 0.25
"""Longest wait between checks that the watch was cut or the server stops."""


@dataclass(frozen=True)
class Watch:
    """One watch request: which collection, from which version, for how long, in what form."""

    resource: resources.Resource
    namespace: str | None
    match: Callable[[Obj], bool]
    resource_version: str | None
    timeout_s: float
    bookmarks: bool
    metadata: bool


def request(
    resource: resources.Resource,
    namespace: str | None,
    query: dict[str, list[str]],
    accept: str | None,
) -> Watch:
    """The watch a collection GET with ``watch=true`` asks for (a malformed one is a 400)."""

    def param(name: str) -> str | None:
        values = query.get(name)
        return values[-1] if values else None

    version = param("resourceVersion")
    timeout = param("timeoutSeconds")
    try:
        if version not in (None, ""):
            int(version or "")
        timeout_s = float(timeout) if timeout else DEFAULT_TIMEOUT_S
    except ValueError:
        raise errors.bad_request("resourceVersion and timeoutSeconds must be integers") from None
    return Watch(
        resource=resource,
        namespace=namespace,
        match=listing.matcher(param("labelSelector"), param("fieldSelector")),
        resource_version=version,
        timeout_s=timeout_s,
        bookmarks=(param("allowWatchBookmarks") or "").lower() == "true",
        metadata=listing.metadata_only(accept, watch=True),
    )


def events(
    objects: store.Store,
    watch: Watch,
    *,
    stopped: Callable[[], bool],
    bookmark_interval_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Obj]:
    """The watch's events, as ``{"type", "object"}`` dicts, until its timeout or ``stopped``.

    Events are taken under the store's lock and yielded outside it."""
    deadline = clock() + watch.timeout_s
    interval = bookmark_interval_s if watch.bookmarks and bookmark_interval_s else math.inf
    next_bookmark = clock() + interval
    with objects.lock:
        fresh = watch.resource_version in (None, "", "0")
        last = objects.version if fresh else int(watch.resource_version or 0)
        current = (
            objects.select(watch.resource.plural, watch.namespace, watch.match)[0] if fresh else []
        )
        expired = None if fresh else _expired(objects, last)
    if expired is not None:
        yield expired
        return
    for obj in current:
        yield _event("ADDED", obj, watch)
    while not stopped():
        with objects.lock:
            try:
                changes = objects.history.since(last)
            except history.Expired as exc:  # this watcher fell behind the kept history
                changes, expired = [], _error(exc)
            else:
                expired = None
                if not changes:
                    objects.history.wait(min(deadline, next_bookmark, clock() + _POLL_S) - clock())
        if expired is not None:
            yield expired
            return
        for change in changes:
            last = change.version
            event = _translated(change, watch)
            if event is not None:
                yield event
        now = clock()
        if now >= deadline:
            if watch.bookmarks:
                yield _bookmark(last, watch)
            return
        if now >= next_bookmark:
            next_bookmark = now + interval
            yield _bookmark(last, watch)


def _expired(objects: store.Store, version: int) -> Obj | None:
    if version < objects.history.compacted:
        return _error(history.Expired(version, objects.history.compacted))
    return None


def _error(exc: history.Expired) -> Obj:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": str(exc),
        "reason": "Expired",
        "code": 410,
    }
    return {"type": "ERROR", "object": status}


def _translated(change: history.Change, watch: Watch) -> Obj | None:
    """What ``change`` looks like to this watch (``None``: nothing it selects changed)."""
    if change.plural != watch.resource.plural:
        return None
    if watch.namespace is not None and change.namespace != watch.namespace:
        return None
    was = change.previous is not None and watch.match(change.previous)
    if change.type == "DELETED":
        return _event("DELETED", change.obj, watch) if was else None
    now = watch.match(change.obj)
    if now:
        return _event("MODIFIED" if was else "ADDED", change.obj, watch)
    if was and change.previous is not None:  # it stopped matching: gone from this watch
        gone = {
            **change.previous,
            "metadata": {**change.previous["metadata"], "resourceVersion": str(change.version)},
        }
        return _event("DELETED", gone, watch)
    return None


def _event(kind: str, obj: Obj, watch: Watch) -> Obj:
    return {"type": kind, "object": listing.as_metadata(obj) if watch.metadata else obj}


def _bookmark(version: int, watch: Watch) -> Obj:
    kind = "PartialObjectMetadata" if watch.metadata else watch.resource.kind
    api_version = listing.META_API_VERSION if watch.metadata else watch.resource.api_version
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": kind,
            "apiVersion": api_version,
            "metadata": {"resourceVersion": str(version)},
        },
    }
