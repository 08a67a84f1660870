"""Credentials presented as ``<prefix><id><separator><secret>`` and stored only as a keyed hash
(HMAC-SHA256 of ``<id>:<secret>``): API keys and user sessions.

The secret is 32 random bytes in hex; it is never stored. A presented credential is proven in
constant time, an unknown id included, so timing does not tell ids apart.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Mapping
from typing import Any, Generic

from occ.foundation import ids
from occ.state.rows import D


@dataclasses.dataclass(frozen=True)
class Issued:
    """A new credential: its id, the hash to store, and the one presented form to hand out."""

    id: str
    hashed: str
    presented: str = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True)
class KeyedHash:
    """The presented form of one kind of credential (``kind`` names its id in ``ids``)."""

    kind: str
    prefix: str
    separator: str

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile(
            f"{re.escape(self.prefix)}({ids.PREFIXES[self.kind]}_{ids.UUID4_PATTERN})"
            f"{re.escape(self.separator)}([0-9a-f]{{64}})"
        )

    def issue(self, key: str) -> Issued:
        """A new id and secret, hashed with ``key``."""
        credential_id = ids.new(self.kind)
        secret = secrets.token_hex(32)
        return Issued(
            id=credential_id,
            hashed=digest(key, credential_id, secret),
            presented=f"{self.prefix}{credential_id}{self.separator}{secret}",
        )

    def parse(self, presented: str) -> tuple[str, str] | None:
        """``(id, secret)`` of a well-formed presented credential, else ``None``."""
        match = self._pattern.fullmatch(presented)
        return None if match is None else (match.group(1), match.group(2))

    def proven(
        self,
        presented: str,
        key: str,
        read: Callable[[str], Mapping[Any, Any] | None],
        hashed: str,
    ) -> Mapping[Any, Any] | None:
        """The row ``read`` finds for the id of ``presented`` when its ``hashed`` column matches
        the presented secret, else ``None`` (whether it is live is the caller's to judge)."""
        parsed = self.parse(presented)
        if parsed is None:
            return None
        credential_id, secret = parsed
        row = read(credential_id)
        # an unknown id still costs one digest comparison, so timing does not tell ids apart
        expected = row[hashed] if row is not None else digest(key, credential_id, "")
        matches = hmac.compare_digest(expected, digest(key, credential_id, secret))
        return row if row is not None and matches else None


def digest(key: str, credential_id: str, secret: str) -> str:
    """The stored hash of a credential's secret."""
    return hmac.new(key.encode(), f"{credential_id}:{secret}".encode(), hashlib.sha256).hexdigest()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Identified(Generic[D]):
    """A live credential that a presented one proves, with what authentication needs of its
    owner."""

    credential: D
    principal_disabled: bool
    touch_due: bool
    """Its use is due for recording (``touch`` would record it)."""


def identified(row: Mapping[Any, Any], make: Callable[[Mapping[Any, Any]], D]) -> Identified[D]:
    """The ``Identified`` of the row an identifying statement read: the credential ``make``
    builds of it, with the row's ``principal_disabled`` and ``touch_due``."""
    return Identified(
        credential=make(row),
        principal_disabled=bool(row["principal_disabled"]),
        touch_due=bool(row["touch_due"]),
    )
