"""Account Backend drivers: who issues managed accounts and keeps their access tokens.

An account Backend issues an account into a workspace of its own and holds the account's
access token; occ keeps the account's identity and the Backend binding it verified at issue
(``occ.state.accounts``), never the token. The Backend answers the account's current token
reference (an opaque string that names one token, which a rotation replaces), who owns the
credential a reference names, whether it withdrew the account, and, to the worker that
delivers it, a token's value. Values never reach an error message, a log line or a reference.

``standin`` (``occ.drivers.account.standin``) is a development Backend kept in a directory,
for the tests and ``occ dev``. ``ownership`` holds the pure checks a worker runs on the answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Protocol

WORKSPACE_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""A Backend workspace's name."""


@dataclass(frozen=True)
class Binding:
    """What owns a credential: the Backend (its stable id), the driver that speaks to it, and
    the Backend's workspace the account belongs to."""

    backend_id: str
    driver: str
    workspace: str


@dataclass(frozen=True)
class Credential:
    """A token reference's owner at the Backend: the account it was issued to, the binding it
    lives under, and whether the Backend withdrew it."""

    account_id: str
    binding: Binding
    withdrawn: bool


class AccountBackend(Protocol):
    """Issues accounts and answers for their tokens (never logs or echoes a token)."""

    @property
    def driver(self) -> str:
        """The driver's id (``standin``)."""
        ...

    def issue(self, namespace_id: str, account_id: str, workspace: str) -> Binding:
        """Issue the account ``account_id`` into ``workspace``; the binding it lives under.

        Raises:
            InvalidInput: the Backend has no such workspace (at ``("workspace",)``).
            Conflict: the account was issued already.
            DependencyUnavailable: the Backend cannot be reached now.
        """
        ...

    def current_token(self, account_id: str) -> str | None:
        """The reference of the account's current access token; ``None`` once withdrawn or
        unknown to the Backend.

        Raises:
            DependencyUnavailable: the Backend cannot be reached now.
        """
        ...

    def credential(self, token_reference: str) -> Credential | None:
        """Who owns the token ``token_reference`` names, or ``None`` if the Backend never
        issued it.

        Raises:
            DependencyUnavailable: the Backend cannot be reached now.
        """
        ...

    def withdrawn(self, account_id: str) -> bool:
        """Whether the Backend withdrew the account (an unknown account counts as withdrawn).

        Raises:
            DependencyUnavailable: the Backend cannot be reached now.
        """
        ...

    def token_value(self, token_reference: str) -> str:
        """The access token a reference names, for delivery to the runtime.

        Raises:
            SecretUnreadable: the token is gone or withdrawn.
            DependencyUnavailable: the Backend cannot be reached now.
        """
        ...
