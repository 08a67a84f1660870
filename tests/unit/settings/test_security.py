"""The security settings: the fingerprint key."""

from __future__ import annotations

import pytest

from occ.foundation import errors
from occ.settings.config import Settings


def test_the_fingerprint_key_is_derived_from_the_secret_key_unless_set() -> None:
    derived = Settings(secret_key="one-" + "k" * 40).credential_fingerprint_key
    assert derived == Settings(secret_key="one-" + "k" * 40).credential_fingerprint_key
    assert derived != Settings(secret_key="two-" + "k" * 40).credential_fingerprint_key
    assert "k" * 40 not in derived
    explicit = Settings(fingerprint_key="f" * 40)
    assert explicit.credential_fingerprint_key == "f" * 40
    assert "f" * 40 not in repr(explicit)


def test_a_short_or_empty_fingerprint_key_is_refused() -> None:
    with pytest.raises(errors.InvalidSettings) as empty:
        Settings(fingerprint_key="")
    assert empty.value.errors[0].pointer == "/fingerprint_key"
    production = {
        "environment": "production",
        "compute_driver": "docker",
        "api_key_pepper": "p" * 40,
        "secret_key": "s" * 40,
    }
    with pytest.raises(errors.InvalidSettings) as short:
        Settings(**production, fingerprint_key="short")
    assert short.value.errors[0].pointer == "/fingerprint_key"
    assert Settings(**production, fingerprint_key="f" * 40).fingerprint_key == "f" * 40
