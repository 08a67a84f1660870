"""The Secret Driver the settings select, and how a bad selection stops the process."""

from __future__ import annotations

from pathlib import Path

import pytest

from occ.foundation import errors
from occ.runtime import composition
from occ.settings.config import Settings
from occ.state import secret_store


def test_the_sealed_row_is_the_default_secret_driver() -> None:
    driver = composition.secret_driver(Settings(secret_key="a-key"))
    assert isinstance(driver, secret_store.SecretStore)
    stored = driver.seal("ns_1", "sec_1", "value")
    assert b"value" not in stored
    assert driver.unseal("ns_1", "sec_1", stored) == "value"


def test_an_unknown_secret_driver_is_refused() -> None:
    with pytest.raises(errors.InvalidInput) as raised:
        composition.secret_driver(Settings(secret_driver="vault"))
    assert raised.value.errors[0].pointer == "/secret_driver"


def test_a_kubernetes_secret_driver_without_a_usable_kubeconfig_is_refused(
    tmp_path: Path,
) -> None:
    settings = Settings(secret_driver="kubernetes", kubernetes_kubeconfig=str(tmp_path / "missing"))
    with pytest.raises(errors.InvalidInput) as raised:
        composition.secret_driver(settings)
    assert "KUBERNETES_SETTINGS_INVALID" in raised.value.errors[0].message
