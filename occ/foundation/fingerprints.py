"""Short, keyed fingerprints of secret values, for proving delivery without showing them.

A fingerprint is the first ``LENGTH`` hex digits of an HMAC-SHA-256 of the value, keyed with a
per-revision key that only occ's workers (which derive it from the installation's fingerprint
key, ``Settings.fingerprint_key``) and the revision's runtime (which receives it beside the
credential, in ``KEY_FILE``) hold. Without the key a fingerprint cannot be checked against a
guess, so a short credential cannot be brute-forced from a gateway's ``/healthz`` or a
Kubernetes annotation; and each revision's key is its own, so one runtime's key opens no other.

Standard library only: the stand-in gateway imports it too.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

LENGTH: Final = 12
"""Hex characters kept: enough to tell two credentials apart."""
KEY_FILE: Final = "fingerprint-key"
"""The file beside a delivered credential that holds its revision's fingerprint key."""


def revision_key(installation_key: str, revision_id: str) -> str:
    """The fingerprint key of one revision, derived from the installation's key."""
    message = f"occ-fingerprint-key:{revision_id}".encode()
    return hmac.new(installation_key.encode(), message, hashlib.sha256).hexdigest()


def key_id(installation_key: str) -> str:
    """A short, public name of the installation's key: tells which key made a fingerprint."""
    return hmac.new(
        installation_key.encode(), b"occ-fingerprint-key-id", hashlib.sha256
    ).hexdigest()[:LENGTH]


def of(value: str, key: str) -> str:
    """The fingerprint of ``value`` under ``key`` (a revision's key)."""
    digest = hmac.new(key.encode(), f"occ-credential:{value}".encode(), hashlib.sha256)
    return digest.hexdigest()[:LENGTH]
