"""Credential fingerprints are keyed: per installation key and per revision."""

from __future__ import annotations

import hashlib

from occ.foundation import fingerprints


def test_a_fingerprint_depends_on_the_value_and_the_key() -> None:
    key = fingerprints.revision_key("installation-key", "rev_1")
    shown = fingerprints.of("sk-short", key)
    assert len(shown) == fingerprints.LENGTH and int(shown, 16) >= 0
    assert shown == fingerprints.of("sk-short", key)
    assert shown != fingerprints.of("sk-other", key)
    assert shown != fingerprints.of(
        "sk-short", fingerprints.revision_key("installation-key", "rev_2")
    )
    assert shown != fingerprints.of("sk-short", fingerprints.revision_key("rotated-key", "rev_1"))


def test_a_fingerprint_is_not_the_plain_hash_a_guess_could_be_checked_against() -> None:
    key = fingerprints.revision_key("installation-key", "rev_1")
    unkeyed = hashlib.sha256(b"occ-credential:sk-short").hexdigest()[: fingerprints.LENGTH]
    assert fingerprints.of("sk-short", key) != unkeyed
    assert "installation-key" not in key


def test_the_key_id_names_the_installation_key_without_showing_it() -> None:
    assert fingerprints.key_id("installation-key") == fingerprints.key_id("installation-key")
    assert fingerprints.key_id("installation-key") != fingerprints.key_id("rotated-key")
    assert len(fingerprints.key_id("installation-key")) == fingerprints.LENGTH
