"""The ``local`` driver's on-disk store: ids, modes, atomic documents and the Agent lock."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.local import store
from tests.support.held_elsewhere import held_elsewhere


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _operation() -> base.Operation:
    return base.Operation(work_id="work_1", claim_token="token_1", abort=threading.Event())


@pytest.mark.parametrize("value", ["", "-rf", "../etc", "a/b", "a b", "ns.1", "é"])
def test_an_id_that_is_not_one_safe_path_component_is_refused(value: str) -> None:
    with pytest.raises(base.PermanentDriverError) as raised:
        store.checked_id(value)
    assert raised.value.code == "INVALID_IDENTIFIER"
    with pytest.raises(base.PermanentDriverError):
        store.Layout(Path("/nowhere")).revision_dir("agt_1", value)


def test_the_layout_names_every_place() -> None:
    layout = store.Layout(Path("/r"))
    assert layout.journal == Path("/r/effects.jsonl")
    assert layout.namespace_dir("ns_1") == Path("/r/namespaces/ns_1")
    assert layout.active_pointer("agt_1") == Path("/r/agents/agt_1/active.json")
    assert layout.revision_dir("agt_1", "rev_1") == Path("/r/agents/agt_1/revisions/rev_1")


@pytest.mark.usefixtures("permissive_umask")
def test_directories_are_made_0700_down_from_the_first_missing_one(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    deep = tmp_path / "a" / "b" / "c"
    store.make_directories(deep)
    assert [_mode(path) for path in (tmp_path / "a", tmp_path / "a" / "b", deep)] == [0o700] * 3
    assert _mode(tmp_path) == 0o755  # an existing directory is left alone
    store.make_directories(deep)  # idempotent


@pytest.mark.usefixtures("permissive_umask")
def test_documents_are_replaced_atomically_as_0600_files(tmp_path: Path) -> None:
    path = tmp_path / "runtime.json"
    path.write_text("old", encoding="utf-8")
    os.chmod(path, 0o644)
    store.write_json(path, {"pid": 1})
    assert store.read_json(path) == {"pid": 1}
    assert _mode(path) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runtime.json"]  # no temporary left


def test_a_failed_write_leaves_the_old_document_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "configuration.json"
    store.write_snapshot(path, {"model": "m"})
    with pytest.raises(TypeError):
        store.write_snapshot(path, {"model": object()})
    assert store.read_json(path) == {"model": "m"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configuration.json"]


def test_an_unchanged_snapshot_is_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "configuration.json"
    store.write_snapshot(path, {"b": 1, "a": {"c": [1, 2]}})
    before = path.stat().st_ino
    store.write_snapshot(path, {"a": {"c": [1, 2]}, "b": 1})
    assert path.stat().st_ino == before
    store.write_snapshot(path, {"b": 2})
    assert path.stat().st_ino != before
    assert store.read_json(path) == {"b": 2}


def test_read_json_is_none_for_missing_broken_or_non_object_documents(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    assert store.read_json(tmp_path / "missing.json") is None
    assert store.read_json(tmp_path / "broken.json") is None
    assert store.read_json(tmp_path / "list.json") is None
    assert store.read_json(tmp_path / "list.json" / "below") is None


def test_remove_tree_is_idempotent(tmp_path: Path) -> None:
    directory = tmp_path / "revision"
    store.make_directories(directory / "inner")
    store.remove_tree(directory)
    assert not directory.exists()
    store.remove_tree(directory)


@pytest.mark.usefixtures("permissive_umask")
def test_the_agent_lock_excludes_a_second_holder_until_released(tmp_path: Path) -> None:
    agent = tmp_path / "agents" / "agt_1"
    with held_elsewhere(lambda: store.agent_lock(_operation(), agent)):
        assert _mode(agent / ".lock") == 0o600
        assert _mode(agent) == 0o700
        waiting = _operation()
        timer = threading.Timer(0.05, waiting.abort.set)  # the abort event ends the wait
        timer.start()
        with pytest.raises(base.Aborted), store.agent_lock(waiting, agent):
            pytest.fail("the lock was taken twice")
        timer.cancel()
    with store.agent_lock(_operation(), agent):  # free again
        pass


def test_an_agent_without_a_directory_is_neither_locked_nor_recreated(tmp_path: Path) -> None:
    agent = tmp_path / "agents" / "agt_gone"
    with store.agent_lock(_operation(), agent, create=False):
        pass
    assert not agent.exists()
