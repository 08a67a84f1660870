"""The filesystem Configuration Driver: one file per generation, and what the row keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from occ.drivers.configuration import database, filesystem
from occ.foundation import errors


def test_each_kept_generation_is_its_own_file_and_loads_back(tmp_path: Path) -> None:
    store = filesystem.FilesystemConfigurations(tmp_path)
    first = store.keep("ns_1", "cfg_1", 1, {"model": "a"})
    second = store.keep("ns_1", "cfg_1", 2, {"model": "b"})
    assert store.load("ns_1", "cfg_1", first) == {"model": "a"}
    assert store.load("ns_1", "cfg_1", second) == {"model": "b"}
    racing = store.keep("ns_1", "cfg_1", 2, {"model": "c"})  # a concurrent update of generation 2
    assert store.load("ns_1", "cfg_1", second) == {"model": "b"}  # each names its own file
    assert store.load("ns_1", "cfg_1", racing) == {"model": "c"}
    store.forget("ns_1", "cfg_1")
    with pytest.raises(errors.DependencyUnavailable):
        store.load("ns_1", "cfg_1", first)


def test_documents_kept_in_the_row_still_load(tmp_path: Path) -> None:
    store = filesystem.FilesystemConfigurations(tmp_path)
    assert store.load("ns_1", "cfg_1", {"model": "in-the-row"}) == {"model": "in-the-row"}


def test_a_reference_the_database_driver_cannot_follow_is_refused(tmp_path: Path) -> None:
    stored = filesystem.FilesystemConfigurations(tmp_path).keep("ns_1", "cfg_1", 1, {"a": 1})
    with pytest.raises(errors.DependencyUnavailable) as raised:
        database.DATABASE.load("ns_1", "cfg_1", stored)
    assert "filesystem" in raised.value.detail


@pytest.mark.parametrize(
    "stored",
    [
        {"$occConfiguration": {"driver": "filesystem", "file": "../../etc/passwd"}},
        {"$occConfiguration": {"driver": "configmap", "file": "1-x.json"}},
    ],
)
def test_a_malformed_or_foreign_reference_is_refused(
    tmp_path: Path, stored: dict[str, object]
) -> None:
    with pytest.raises(errors.DependencyUnavailable):
        filesystem.FilesystemConfigurations(tmp_path).load("ns_1", "cfg_1", stored)


def test_ids_that_are_not_file_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidInput):
        filesystem.FilesystemConfigurations(tmp_path).keep("..", "cfg_1", 1, {})
