"""occ's own objects on the Docker engine, found by name and verified by label: a Namespace's
network and a revision's gateway container. A same-named object occ does not own is refused
(``DOCKER_OBJECT_NOT_OWNED``), never adopted, unless the caller asks to treat it as absent.
"""

from __future__ import annotations

import contextlib
from typing import Any

from occ.drivers.compute import base
from occ.drivers.compute.docker import engine as docker_engine
from occ.drivers.compute.docker import naming, snapshots


def network(
    engine: docker_engine.Engine,
    namespace_id: str,
    *,
    create: bool,
    refuse_foreign: bool = True,
) -> dict[str, Any] | None:
    """The Namespace's network (created when asked); a same-named foreign one is refused
    (or, with ``refuse_foreign=False``, treated as absent)."""
    name = naming.network(namespace_id)
    expected = naming.owned(namespace_id)

    def same_name() -> list[dict[str, Any]]:
        # the engine's name filter matches substrings: compare exactly
        return [n for n in engine.networks(name=name) if n.get("Name") == name]

    found = same_name()
    if not found and create:
        # a conflict: created meanwhile by another pass (or a foreign one: checked below)
        with contextlib.suppress(docker_engine.Conflict):
            engine.create_network(name, expected)
        found = same_name()
    owned = [n for n in found if naming.is_owned(n.get("Labels"), expected)]
    if found and not owned:
        if not refuse_foreign:
            return None
        raise base.PermanentDriverError(
            snapshots.NOT_OWNED, f"network {name} exists but occ does not own it (labels differ)"
        )
    if not owned:
        return None
    return min(owned, key=lambda n: str(n.get("Created", "")))  # oldest, if duplicated


def gateway(
    engine: docker_engine.Engine,
    revision_id: str,
    namespace_id: str,
    *,
    refuse_foreign: bool = True,
) -> dict[str, Any] | None:
    """The revision's gateway container, or ``None``; a same-named foreign one is refused (or,
    with ``refuse_foreign=False``, treated as absent)."""
    name = naming.gateway(revision_id)
    try:
        found = engine.container(name)
    except docker_engine.NotFound:
        return None
    expected = {
        naming.NAMESPACE_ID: namespace_id,
        naming.REVISION_ID: revision_id,
        naming.ROLE: naming.GATEWAY,
    }
    if naming.is_owned((found.get("Config") or {}).get("Labels"), expected):
        return found
    if not refuse_foreign:
        return None
    raise base.PermanentDriverError(
        snapshots.NOT_OWNED, f"container {name} exists but is not occ's"
    )
