"""Startup selection of the hook owners: the order, and every way it fails closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from occ.drivers import selection
from occ.foundation import errors
from occ.settings.config import Settings


def _select(**values: Any) -> selection.Selection:
    return selection.select(Settings(**values))


def test_nothing_selected_means_no_owners() -> None:
    chosen = _select()
    assert chosen.hook_owners == ()
    assert chosen.sandbox_driver is None
    assert not chosen.dispatcher


def test_the_default_order_is_configuration_sandbox_iam(tmp_path: Path) -> None:
    chosen = _select(sandbox_driver="reference", iam_hook="runtime-identities")
    assert chosen.hook_owners == ("sandbox:reference", "iam:runtime-identities")
    assert chosen.sandbox_driver == "reference"


def test_an_explicit_order_is_kept() -> None:
    chosen = _select(
        sandbox_driver="reference",
        iam_hook="runtime-identities",
        lifecycle_hook_owners="iam, sandbox",
    )
    assert chosen.hook_owners == ("iam:runtime-identities", "sandbox:reference")


@pytest.mark.parametrize(
    ("values", "pointer", "words"),
    [
        ({"lifecycle_hook_owners": "sandbox"}, "/lifecycle_hook_owners", "no sandbox driver"),
        ({"lifecycle_hook_owners": "compute"}, "/lifecycle_hook_owners", "unknown hook owner"),
        (
            {"iam_hook": "runtime-identities", "lifecycle_hook_owners": "iam,iam"},
            "/lifecycle_hook_owners",
            "twice",
        ),
        (
            {
                "sandbox_driver": "reference",
                "iam_hook": "runtime-identities",
                "lifecycle_hook_owners": "iam",
            },
            "/lifecycle_hook_owners",
            "leaves out the selected sandbox",
        ),
        ({"sandbox_driver": "firecracker"}, "/sandbox_driver", "unknown sandbox driver"),
        ({"iam_hook": "oidc"}, "/iam_hook", "unknown IAM hook"),
        ({"configuration_driver": "nfs"}, "/configuration_driver", "unknown Configuration"),
        (
            {"configuration_driver": "filesystem"},
            "/development_configuration_root",
            "needs it",
        ),
        (
            {
                "environment": "production",
                "api_key_pepper": "p" * 40,
                "secret_key": "k" * 40,
                "compute_driver": "docker",
                "configuration_driver": "filesystem",
                "development_configuration_root": "/srv/configurations",
            },
            "/configuration_driver",
            "for development",
        ),
        (
            {"lifecycle_hook_owners": "configuration"},
            "/lifecycle_hook_owners",
            "no configuration driver",
        ),
        ({"sandbox_egress_allow": ["a.example"]}, "/sandbox_egress_allow", "no sandbox driver"),
        ({"account_backend": "chatgpt"}, "/account_backend", "unknown account Backend"),
        (
            {
                "environment": "production",
                "api_key_pepper": "p" * 40,
                "secret_key": "k" * 40,
                "compute_driver": "docker",
                "account_backend": "standin",
            },
            "/account_backend",
            "for development",
        ),
        (
            {"sandbox_driver": "reference", "sandbox_egress_allow": ["https://x"]},
            "/sandbox_egress_allow",
            "DNS names",
        ),
    ],
)
def test_an_unavailable_owner_fails_closed_naming_the_setting(
    values: dict[str, Any], pointer: str, words: str
) -> None:
    with pytest.raises(errors.InvalidInput) as raised:
        _select(**values)
    [field] = raised.value.errors
    assert field.pointer == pointer
    assert words in field.message


def test_owners_are_built_from_their_own_settings_only() -> None:
    key = "a-secret-key-that-owners-never-hold-0123456789"
    chosen = _select(sandbox_driver="reference", iam_hook="runtime-identities", secret_key=key)
    for owner in chosen.dispatcher.hooks:
        bound = [getattr(owner, stage).__self__ for stage in ("before_workload_start",)]
        for instance in bound:
            assert key not in repr(vars(instance))
            assert not any(isinstance(value, Settings) for value in vars(instance).values())


def test_the_configuration_driver_is_the_database_unless_the_filesystem_is_chosen(
    tmp_path: Path,
) -> None:
    assert _select().configuration.id == "database"
    chosen = _select(
        configuration_driver="filesystem", development_configuration_root=str(tmp_path)
    )
    assert chosen.configuration.id == "filesystem"
    assert chosen.hook_owners == ()  # no Configuration Driver of today owns hooks


def test_the_account_backend_is_none_unless_the_standin_is_chosen(tmp_path: Path) -> None:
    assert _select().accounts is None
    chosen = _select(account_backend="standin", account_backend_root=str(tmp_path))
    assert chosen.accounts is not None and chosen.accounts.driver == "standin"
