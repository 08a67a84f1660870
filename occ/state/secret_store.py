"""The Secret store: seals Secret values for the ``secrets.value_ciphertext`` column.

AES-256-GCM with a key derived from ``settings.secret_key`` by HKDF-SHA256, a fresh random
96-bit nonce per value, and the Secret's id as associated data, so a ciphertext copied onto
another row does not decrypt. Layout: one version byte, the nonce, then ciphertext and tag.

Values and keys never appear in an exception message, a ``repr`` or a log line.
"""

from __future__ import annotations

import os
from typing import Final

from cryptography import exceptions as crypto_exceptions
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import aead
from cryptography.hazmat.primitives.kdf import hkdf

from occ.foundation import errors
from occ.settings import config

VERSION: Final = 1
NONCE_BYTES: Final = 12
KEY_BYTES: Final = 32
TAG_BYTES: Final = 16

_PREFIX: Final = bytes([VERSION])
_SALT: Final = b"occ/secret-store"
_INFO: Final = b"occ/secret-store/v1/aes-256-gcm"


SecretUnreadable = errors.SecretUnreadable
"""A stored Secret value cannot be decrypted (wrong key, wrong row, or damaged)."""

DRIVER_ID: Final = "sealed"


class SecretStore:
    """Encrypts and decrypts Secret values with one derived key: the ``sealed`` Secret Driver
    (``occ.drivers.secret.SecretDriver``), whose values live sealed in the Secret's row."""

    __slots__ = ("_aead",)
    id: Final = DRIVER_ID

    def __init__(self, secret_key: str) -> None:
        if not isinstance(secret_key, str) or not secret_key:
            raise errors.InvalidSettings.at(("secret_key",), "must be a non-empty string")
        derived = hkdf.HKDF(
            algorithm=hashes.SHA256(), length=KEY_BYTES, salt=_SALT, info=_INFO
        ).derive(secret_key.encode("utf-8"))
        self._aead = aead.AESGCM(derived)

    @classmethod
    def from_settings(cls, settings: config.Settings) -> SecretStore:
        """The store keyed by ``settings.secret_key``."""
        return cls(settings.secret_key)

    def __repr__(self) -> str:
        return "SecretStore(<redacted>)"

    def encrypt(self, secret_id: str, value: str) -> bytes:
        """Seal ``value`` for the row ``secret_id``."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, value.encode("utf-8"), _associated(secret_id))
        return _PREFIX + nonce + sealed

    def seal(self, namespace_id: str, secret_id: str, value: str) -> bytes:
        """What the row keeps for ``value``: its ciphertext."""
        return self.encrypt(secret_id, value)

    def unseal(self, namespace_id: str, secret_id: str, stored: bytes) -> str:
        """The value whose ciphertext the row keeps, or ``SecretUnreadable``."""
        return self.decrypt(secret_id, stored)

    def remove(self, namespace_id: str, secret_id: str) -> None:
        """Nothing is kept outside the row."""

    def decrypt(self, secret_id: str, ciphertext: bytes) -> str:
        """The value sealed for ``secret_id``, or ``SecretUnreadable``."""
        blob = bytes(ciphertext)
        if len(blob) < 1 + NONCE_BYTES + TAG_BYTES or blob[:1] != _PREFIX:
            raise SecretUnreadable("the stored secret value has an unknown format")
        nonce, sealed = blob[1 : 1 + NONCE_BYTES], blob[1 + NONCE_BYTES :]
        try:
            plaintext = self._aead.decrypt(nonce, sealed, _associated(secret_id))
            return plaintext.decode("utf-8")
        except (crypto_exceptions.InvalidTag, UnicodeDecodeError):
            raise SecretUnreadable() from None


def encrypt(settings: config.Settings, secret_id: str, value: str) -> bytes:
    """Seal ``value`` for the row ``secret_id`` with the key of ``settings``."""
    return SecretStore.from_settings(settings).encrypt(secret_id, value)


def decrypt(settings: config.Settings, secret_id: str, ciphertext: bytes) -> str:
    """The value of the row ``secret_id`` from its stored ciphertext, or ``SecretUnreadable``."""
    return SecretStore.from_settings(settings).decrypt(secret_id, ciphertext)


def _associated(secret_id: str) -> bytes:
    if not isinstance(secret_id, str) or not secret_id:
        raise ValueError("a secret id is required")
    return secret_id.encode("utf-8")
