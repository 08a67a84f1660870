"""The stand-in account Backend: issue, answer for tokens, withdraw, rotate, across instances."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from occ.drivers.account import Binding, Credential, standin
from occ.foundation import errors, ids


def _issued(backend: standin.StandinBackend) -> tuple[str, str]:
    """An account ``backend`` issued in ``research``: its id and current token reference."""
    account_id = ids.new("account")
    backend.issue("ns_x", account_id, "research")
    reference = backend.current_token(account_id)
    assert reference is not None
    return account_id, reference


def test_an_issued_account_has_a_current_token_any_instance_sees(tmp_path: Path) -> None:
    backend = standin.StandinBackend(tmp_path)
    account_id = ids.new("account")
    binding = backend.issue("ns_x", account_id, "research")
    assert binding == Binding(backend.backend_id, "standin", "research")

    other = standin.StandinBackend(tmp_path)  # another process naming the same directory
    assert other.backend_id == backend.backend_id
    reference = other.current_token(account_id)
    assert reference == f"standin/{account_id}/1"
    assert other.credential(reference) == Credential(account_id, binding, withdrawn=False)
    token = other.token_value(reference)
    assert len(token) >= 32 and token not in repr(other)
    assert not other.withdrawn(account_id)


def test_files_are_the_owners_only(tmp_path: Path) -> None:
    account_id, _ = _issued(standin.StandinBackend(tmp_path / "root"))
    for path in (tmp_path / "root" / "accounts" / f"{account_id}.json",):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "root").stat().st_mode) == 0o700


def test_withdrawal_ends_the_current_token_and_its_value(tmp_path: Path) -> None:
    backend = standin.StandinBackend(tmp_path)
    account_id, reference = _issued(backend)
    backend.withdraw(account_id)
    backend.withdraw(account_id)  # idempotent
    assert backend.withdrawn(account_id)
    assert backend.current_token(account_id) is None
    credential = backend.credential(reference)
    assert credential is not None and credential.withdrawn
    with pytest.raises(errors.SecretUnreadable):
        backend.token_value(reference)


def test_rotation_keeps_the_old_reference_answerable(tmp_path: Path) -> None:
    backend = standin.StandinBackend(tmp_path)
    account_id, first = _issued(backend)
    second = backend.rotate(account_id)
    assert backend.current_token(account_id) == second != first
    assert backend.token_value(first) != backend.token_value(second)
    assert backend.credential(first) is not None


def test_a_moved_account_lives_under_another_workspace(tmp_path: Path) -> None:
    backend = standin.StandinBackend(tmp_path)
    account_id, reference = _issued(backend)
    backend.move(account_id, "sales")
    credential = backend.credential(reference)
    assert credential is not None and credential.binding.workspace == "sales"


def test_unknown_references_and_accounts(tmp_path: Path) -> None:
    backend = standin.StandinBackend(tmp_path)
    unknown = ids.new("account")
    assert backend.current_token(unknown) is None
    assert backend.withdrawn(unknown)
    for reference in (f"standin/{unknown}/1", "standin/../../etc/passwd/1", "other"):
        assert backend.credential(reference) is None
        with pytest.raises(errors.SecretUnreadable):
            backend.token_value(reference)
    with pytest.raises(errors.NotFound):
        backend.withdraw(unknown)


def test_workspaces_and_repeats_are_refused(tmp_path: Path) -> None:
    backend = standin.StandinBackend(tmp_path, workspaces=("research",))
    account_id = ids.new("account")
    with pytest.raises(errors.InvalidInput) as refused:
        backend.issue("ns_x", account_id, "sales")
    assert [error.pointer for error in refused.value.errors] == ["/workspace"]
    backend.issue("ns_x", account_id, "research")
    with pytest.raises(errors.Conflict):
        backend.issue("ns_x", account_id, "research")
