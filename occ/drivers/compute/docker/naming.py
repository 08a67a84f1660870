"""Names and labels of everything the ``docker`` driver owns, and the test of ownership.

Names are derived from occ's ids (a hash, so any id gives a valid, fixed-length name); the
same id always gives the same name, which makes every create idempotent: a second create
meets a conflict and finds the first. Labels say who owns an object; an object with occ's
name but without matching labels belongs to someone else and is never adopted.

Pure functions only: nothing here talks to the engine.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Final

from occ.drivers.compute import base

PREFIX: Final = "dev.occ."
MANAGED: Final = PREFIX + "managed"
DRIVER: Final = PREFIX + "compute-driver"
NAMESPACE_ID: Final = PREFIX + "namespace-id"
AGENT_ID: Final = PREFIX + "agent-id"
REVISION_ID: Final = PREFIX + "revision-id"
REVISION_NUMBER: Final = PREFIX + "revision-number"
CONFIGURATION_GENERATION: Final = PREFIX + "configuration-generation"
ROLE: Final = PREFIX + "role"
CREDENTIAL_CHANNEL: Final = PREFIX + "credential-channel"
"""``stdin`` when the container waits for its credential on stdin, ``none`` otherwise."""

GATEWAY: Final = "gateway"
SNAPSHOT: Final = "snapshot"
SNAPSHOT_WRITER: Final = "snapshot-writer"

_HASH_LENGTH: Final = 16
_GATEWAY_PREFIX: Final = "occ-gw-"

GATEWAY_NAME: Final = re.compile(re.escape(_GATEWAY_PREFIX) + f"[0-9a-f]{{{_HASH_LENGTH}}}")
"""What every gateway container's name matches, and nothing else occ names does."""


def digest(value: str) -> str:
    """The first 16 hex digits of the SHA-256 of ``value``."""
    return hashlib.sha256(value.encode()).hexdigest()[:_HASH_LENGTH]


def network(namespace_id: str) -> str:
    """The Namespace's bridge network."""
    return f"occ-ns-{digest(namespace_id)}"


def gateway(revision_id: str) -> str:
    """The revision's gateway container."""
    return _GATEWAY_PREFIX + digest(revision_id)


def snapshot(revision_id: str) -> str:
    """The volume holding the revision's configuration snapshot."""
    return f"occ-cfg-{digest(revision_id)}"


def snapshot_writer(revision_id: str) -> str:
    """The never-started container through which the snapshot volume is written."""
    return f"{snapshot(revision_id)}-writer"


def agent_alias(agent_id: str) -> str:
    """The Agent's network alias: the name other containers reach the active revision by."""
    return f"agent-{digest(agent_id)}"


def revision_alias(revision_id: str) -> str:
    """The revision's own network alias."""
    return f"revision-{digest(revision_id)}"


def owned(namespace_id: str) -> dict[str, str]:
    """The labels every object of a Namespace carries."""
    return {MANAGED: "true", DRIVER: "docker", NAMESPACE_ID: namespace_id}


def of_revision(revision: base.RevisionSpec, role: str) -> dict[str, str]:
    """The labels of an object that belongs to ``revision`` and plays ``role`` for it."""
    return {
        **owned(revision.namespace_id),
        AGENT_ID: revision.agent_id,
        REVISION_ID: revision.revision_id,
        REVISION_NUMBER: str(revision.revision_number),
        ROLE: role,
    }


def selector(labels: Mapping[str, str]) -> list[str]:
    """Engine label filters (``key=value``) matching every label in ``labels``."""
    return [f"{key}={value}" for key, value in sorted(labels.items())]


def is_owned(labels: Mapping[str, str] | None, expected: Mapping[str, str]) -> bool:
    """Whether an object's labels carry every expected label with its value."""
    found = labels or {}
    return found.get(MANAGED) == "true" and all(
        found.get(key) == value for key, value in expected.items()
    )
