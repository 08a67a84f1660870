"""The Secret store: AES-256-GCM sealing bound to the row id, under a key from the settings."""

from __future__ import annotations

import pytest

from occ.foundation import errors, ids
from occ.settings.config import Settings
from occ.state import secret_store

VALUE = "sk-test-value-\u00e9\u6771\u4eac"


@pytest.fixture
def store() -> secret_store.SecretStore:
    return secret_store.SecretStore("unit-test-key")


def test_round_trip(store: secret_store.SecretStore) -> None:
    secret_id = ids.new("secret")
    sealed = store.encrypt(secret_id, VALUE)
    assert store.decrypt(secret_id, sealed) == VALUE


def test_layout_is_version_nonce_ciphertext_tag(store: secret_store.SecretStore) -> None:
    sealed = store.encrypt(ids.new("secret"), VALUE)
    assert sealed[0] == secret_store.VERSION == 1
    assert len(sealed) == 1 + 12 + len(VALUE.encode()) + 16
    assert VALUE.encode() not in sealed


def test_every_seal_uses_a_fresh_nonce(store: secret_store.SecretStore) -> None:
    secret_id = ids.new("secret")
    first, second = store.encrypt(secret_id, VALUE), store.encrypt(secret_id, VALUE)
    assert first != second
    assert first[1:13] != second[1:13]


def test_a_ciphertext_moved_to_another_row_does_not_decrypt(
    store: secret_store.SecretStore,
) -> None:
    sealed = store.encrypt(ids.new("secret"), VALUE)
    with pytest.raises(secret_store.SecretUnreadable) as raised:
        store.decrypt(ids.new("secret"), sealed)
    assert VALUE not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_another_key_does_not_decrypt(store: secret_store.SecretStore) -> None:
    secret_id = ids.new("secret")
    sealed = store.encrypt(secret_id, VALUE)
    with pytest.raises(secret_store.SecretUnreadable):
        secret_store.SecretStore("another-key").decrypt(secret_id, sealed)


@pytest.mark.parametrize(
    "damage", ["flip-body", "flip-tag", "flip-nonce", "version", "short", "empty"]
)
def test_damaged_ciphertexts_are_refused(store: secret_store.SecretStore, damage: str) -> None:
    secret_id = ids.new("secret")
    sealed = bytearray(store.encrypt(secret_id, VALUE))
    if damage == "flip-body":
        sealed[14] ^= 0x01
    elif damage == "flip-tag":
        sealed[-1] ^= 0x80
    elif damage == "flip-nonce":
        sealed[1] ^= 0x01
    elif damage == "version":
        sealed[0] = 2
    elif damage == "short":
        sealed = sealed[:20]
    else:
        sealed = bytearray()
    with pytest.raises(secret_store.SecretUnreadable) as raised:
        store.decrypt(secret_id, bytes(sealed))
    assert raised.value.code == "SECRET_UNREADABLE"
    assert isinstance(raised.value, errors.OccError)


def test_the_key_comes_from_the_settings() -> None:
    secret_id = ids.new("secret")
    settings = Settings(secret_key="from-settings")
    sealed = secret_store.encrypt(settings, secret_id, VALUE)
    assert secret_store.decrypt(settings, secret_id, sealed) == VALUE
    assert secret_store.SecretStore("from-settings").decrypt(secret_id, sealed) == VALUE
    with pytest.raises(secret_store.SecretUnreadable):
        secret_store.decrypt(Settings(secret_key="other"), secret_id, sealed)


def test_the_empty_value_and_the_largest_value_round_trip(store: secret_store.SecretStore) -> None:
    secret_id = ids.new("secret")
    for value in ("", "x" * 65536):
        assert store.decrypt(secret_id, store.encrypt(secret_id, value)) == value


def test_an_empty_key_or_id_is_refused() -> None:
    with pytest.raises(errors.InvalidInput):
        secret_store.SecretStore("")
    with pytest.raises(ValueError):
        secret_store.SecretStore("k").encrypt("", VALUE)


def test_the_key_never_shows(store: secret_store.SecretStore) -> None:
    assert "unit-test-key" not in repr(store)
    assert repr(store) == "SecretStore(<redacted>)"
