"""Lists as the apiserver answers them: selectors, pages, and the metadata-only form.

Models a collection GET: ``labelSelector`` and ``fieldSelector``, ``limit`` with an opaque
``continue`` token (the next page resumes after the last key; the token carries the first
page's resourceVersion, which every page reports, and expires with a 410 once that version is
compacted away), and ``Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1``
(only each object's ``metadata``, as a metadata-only informer asks). Simplification: a later
page shows objects as they are now, not as they were at the first page's version (a watch from
that version replays the difference). It must not change objects or parse HTTP.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from tests.support.kube_api import errors, history, resources, selectors, store

Obj = resources.Obj

METADATA_LIST = "as=PartialObjectMetadataList"
"""What an ``Accept`` header names to get a list of metadata only."""
METADATA = "as=PartialObjectMetadata"
"""What an ``Accept`` header names to get watch events of metadata only."""
META_API_VERSION = "meta.k8s.io/v1"


def matcher(label_selector: str | None, field_selector: str | None) -> Callable[[Obj], bool]:
    """Whether an object matches both selectors (a malformed one is a 400 right away)."""
    labels_match = selectors.parse_label_selector(label_selector)
    fields_match = selectors.parse_field_selector(field_selector)
    return lambda obj: labels_match(obj["metadata"].get("labels") or {}) and fields_match(obj)


def metadata_only(accept: str | None, *, watch: bool) -> bool:
    """Whether ``accept`` asks for metadata only (the list and watch forms differ)."""
    wanted = (accept or "").replace(" ", "")
    if watch:
        return any(part.split(";", 1)[-1].startswith(METADATA) for part in wanted.split(","))
    return METADATA_LIST in wanted


def as_metadata(obj: Obj) -> Obj:
    """The ``PartialObjectMetadata`` form of an object."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": META_API_VERSION,
        "metadata": obj["metadata"],
    }


def page(
    objects: store.Store,
    resource: resources.Resource,
    namespace: str | None,
    match: Callable[[Obj], bool],
    *,
    limit: int | None = None,
    token: str | None = None,
    metadata: bool = False,
) -> Obj:
    """One list answer: every match, or ``limit`` of them after the ``token``'s position."""
    if limit is not None and limit <= 0:
        limit = None  # the API treats 0 as no limit
    with objects.lock:
        after: store.Position | None = None
        version = objects.version
        if token:
            version, after = _resume(token)
            if version < objects.history.compacted:
                raise _expired(version, objects.history.compacted)
        found, last = objects.select(resource.plural, namespace, match, after=after, limit=limit)
    list_metadata: Obj = {"resourceVersion": str(version)}
    if last is not None:
        list_metadata["continue"] = _token(version, last)
    if metadata:
        return {
            "kind": "PartialObjectMetadataList",
            "apiVersion": META_API_VERSION,
            "metadata": list_metadata,
            "items": [as_metadata(obj) for obj in found],
        }
    return {
        "kind": f"{resource.kind}List",
        "apiVersion": resource.api_version,
        "metadata": list_metadata,
        "items": [_list_item(obj) for obj in found],
    }


def _list_item(obj: Obj) -> Obj:
    """An object as it appears inside a list (no kind, no apiVersion); shares the stored
    object's parts, which are never changed in place."""
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


def _token(version: int, position: store.Position) -> str:
    raw = json.dumps({"rv": version, "start": list(position)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _resume(token: str) -> tuple[int, store.Position]:
    try:
        decoded: Any = json.loads(base64.urlsafe_b64decode(token.encode()))
        version, (namespace, name) = decoded["rv"], decoded["start"]
        if not isinstance(version, int) or not isinstance(namespace, str):
            raise TypeError(type(version))
        return version, (namespace, str(name))
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise errors.bad_request("continue key is not valid") from None


def _expired(asked: int, oldest: int) -> errors.ApiError:
    return errors.ApiError(
        410,
        "Expired",
        f"The provided continue parameter is too old to display a consistent list result "
        f"({history.Expired(asked, oldest)}). You can start a new list without the continue "
        f"parameter.",
    )
