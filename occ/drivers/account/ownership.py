"""The pure checks on a managed-account credential: does what the Backend answers now still
match what a revision pinned?

A revision pins the account, the exact token reference it resolved and the Backend binding
verified then (``Pinned``). Before effects a worker asks the Backend who owns that reference
(``Credential``) and refuses, with a stable code, a credential that is unknown, withdrawn, issued
to another account, or living under another Backend, driver or workspace.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from occ.drivers.account import Binding, Credential


class Refusal(enum.StrEnum):
    """Why a pinned credential may not be used (stable; recorded with the refusal)."""

    UNKNOWN = "CREDENTIAL_UNKNOWN"
    """The Backend never issued the pinned token reference (or forgot it)."""
    WITHDRAWN = "CREDENTIAL_WITHDRAWN"
    """The Backend withdrew the account."""
    OTHER_ACCOUNT = "CREDENTIAL_ACCOUNT_MISMATCH"
    """The reference belongs to another account than the pinned one."""
    OTHER_BACKEND = "CREDENTIAL_BACKEND_MISMATCH"
    """The credential lives under another Backend, driver or workspace than the pinned one."""


@dataclass(frozen=True)
class Pinned:
    """A managed-account harness source as a revision froze it."""

    account_id: str
    token_reference: str
    binding: Binding


SOURCE_KIND: Final = "managedAccount"
"""A revision's ``harness_auth`` kind for a managed account."""


def pinned(harness_auth: Mapping[str, Any]) -> Pinned | None:
    """A revision's managed-account pin (its ``harness_auth``), or ``None`` for a Secret."""
    if harness_auth.get("kind") != SOURCE_KIND:
        return None
    binding = Binding(
        str(harness_auth["backendId"]), str(harness_auth["driver"]), str(harness_auth["workspace"])
    )
    return Pinned(str(harness_auth["accountId"]), str(harness_auth["tokenReference"]), binding)


def refusal(pinned: Pinned, credential: Credential | None) -> Refusal | None:
    """Why the credential the Backend answers for the pinned reference may not be used, or
    ``None`` when it still belongs to the pinned account under the pinned binding."""
    if credential is None:
        return Refusal.UNKNOWN
    if credential.account_id != pinned.account_id:
        return Refusal.OTHER_ACCOUNT
    if credential.binding != pinned.binding:
        return Refusal.OTHER_BACKEND
    if credential.withdrawn:
        return Refusal.WITHDRAWN
    return None
