"""Prefixed resource ids (``ns_<uuid4>``, ``agt_<uuid4>``, ...): minting and validation."""

from __future__ import annotations

import re
import uuid
from typing import Final

from occ.foundation import errors

PREFIXES: Final = {
    "installation": "ins",
    "namespace": "ns",
    "configuration": "cfg",
    "secret": "sec",
    "account": "acc",
    "agent": "agt",
    "agent_revision": "rev",
    "principal": "prn",
    "api_key": "key",
    "user_session": "ses",
    "role": "rol",
    "access_binding": "bnd",
    "restriction": "rst",
    "audit_event": "aud",
    "request": "req",
}

UUID4_PATTERN: Final = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def new(kind: str) -> str:
    """A fresh id for a resource kind."""
    return f"{PREFIXES[kind]}_{uuid.uuid4()}"


def pattern(kind: str) -> str:
    """The anchored regular expression of a kind's ids (also used by CHECK constraints)."""
    return f"^{PREFIXES[kind]}_{UUID4_PATTERN}$"


_COMPILED: Final = {kind: re.compile(pattern(kind)) for kind in PREFIXES}


def is_valid(kind: str, value: object) -> bool:
    """Whether ``value`` is a well-formed id of ``kind``."""
    return isinstance(value, str) and _COMPILED[kind].fullmatch(value) is not None


def refusal(kind: str) -> str:
    """What a value that is not an id of ``kind`` is told (``must be an agent id (agt_...)``)."""
    article = "an" if kind[0] in "aeiou" else "a"
    return f"must be {article} {kind.replace('_', ' ')} id ({PREFIXES[kind]}_<uuid4>)"


def require(kind: str, value: object, path: errors.Path) -> str:
    """``value`` as an id of ``kind``, or ``InvalidInput`` at ``path``."""
    if not is_valid(kind, value):
        raise errors.InvalidInput.at(path, refusal(kind))
    assert isinstance(value, str)
    return value
