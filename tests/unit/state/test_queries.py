"""``queries.parse`` and the work queue's SQL files: named whole statements, comments dropped (a
``:name`` in a comment is never a parameter), malformed blocks refused, and every statement the
queue's modules run is in their file."""

from __future__ import annotations

import ast
import inspect
import re
from importlib import resources
from types import ModuleType

import pytest
import sqlalchemy as sa

from occ.state import queries, starts, work_claims, work_queue

TEXT = """\
-- The file's own header: not a statement.

-- name: first_item
-- One item by id (the description line is for the reader).
SELECT w.* FROM occ.controller_work w
 WHERE w.id = :work_id;   -- keep :not_a_parameter out of the binds

-- name: touch
-- Touch an item; the comment's :lease_ms is only prose.
UPDATE occ.controller_work
   -- a comment line inside the statement, naming :also_prose
   SET updated_at = clock_timestamp()
 WHERE id = :work_id AND claim_token = :token;
"""


def _binds(body: str) -> set[str]:
    return set(sa.text(body).compile().params)


def test_statements_come_by_name_without_comments_or_the_semicolon() -> None:
    statements = queries.parse(TEXT)

    assert list(statements) == ["first_item", "touch"]
    assert (
        statements["first_item"] == "SELECT w.* FROM occ.controller_work w\n WHERE w.id = :work_id"
    )
    assert statements["touch"] == (
        "UPDATE occ.controller_work\n"
        "   SET updated_at = clock_timestamp()\n"
        " WHERE id = :work_id AND claim_token = :token"
    )


def test_a_name_in_a_comment_is_never_a_parameter() -> None:
    statements = queries.parse(TEXT)

    assert _binds(statements["first_item"]) == {"work_id"}
    assert _binds(statements["touch"]) == {"work_id", "token"}


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n", "defined twice"),
        ("-- name: a\nSELECT 1; SELECT 2;\n", "one statement"),
        ("-- name: a\nSELECT 1;\nSELECT 2;\n", "one statement"),
        ("-- name: a\nSELECT 1\n", "one statement"),
        ("-- name: a\n-- only a description\n", "one statement"),
        ("-- name: a\nSELECT 1; -- done\n-- name: b\n", "'b' must be one statement"),
    ],
)
def test_a_malformed_block_is_refused(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        queries.parse(text)


def test_text_without_a_named_statement_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="statement"):
        queries.parse("-- just prose\nSELECT 1;\n")


QUEUE_FILES = [(work_queue, "work_queue.sql"), (work_claims, "work_claims.sql")]
"""The queue's modules and the file of the statements each runs."""


def _statements_run_by(module: ModuleType) -> tuple[set[str], set[str]]:
    """Names in ``SQL["..."]`` and ``HOT["..."]``, and in ``_one_fenced(session, "...", ...)``
    calls."""
    tree = ast.parse(inspect.getsource(module))
    indexed: set[str] = set()
    fenced: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("SQL", "HOT")
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            indexed.add(node.slice.value)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "_one_fenced"
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            fenced.add(node.args[1].value)
    return indexed, fenced


@pytest.mark.parametrize(("module", "filename"), QUEUE_FILES)
def test_the_queue_file_has_every_statement_its_module_runs(
    module: ModuleType, filename: str
) -> None:
    loaded = queries.load(filename)
    indexed, fenced = _statements_run_by(module)

    assert len(indexed | fenced) >= 3  # the walk found the module's statements
    assert (indexed | fenced) - set(loaded) == set()
    assert set(loaded) - (indexed | fenced) == set(), "statements nothing runs"


def test_every_fenced_statement_binds_the_work_id_and_the_claim_token() -> None:
    loaded = queries.load("work_queue.sql")
    _, fenced = _statements_run_by(work_queue)

    for name in fenced:
        assert {"work_id", "token"} <= set(loaded[name].compile().params), name


def test_the_namespace_start_runs_the_queues_start_word_for_word() -> None:
    """``starts.sql`` repeats the start's fenced UPDATE to read the Namespace beside it."""

    def words(sql: str) -> str:
        return " ".join(sql.replace(";", " ").split())

    start = words(work_queue.HOT["start"].sql)
    joined = words(starts.HOT["start_namespace_work"].sql)
    assert f"WITH started AS ( {start} ) SELECT" in joined


def _statements_of_every_file() -> dict[str, str]:
    """Every named statement of the state package's ``.sql`` files, by ``file:name``."""
    folder = resources.files("occ.state").joinpath("sql")
    return {
        f"{entry.name}:{name}": body
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
        for name, body in queries.parse(entry.read_text(encoding="utf-8")).items()
    }


def test_every_statement_that_presents_a_claim_token_is_fenced_by_claim_is_live() -> None:
    statements = _statements_of_every_file()
    fenced = {name for name, body in statements.items() if ":token" in body}

    # the start, renew, release, complete, fail, retry and defer, the Namespace start and the
    # ready Namespace's publication
    assert len(fenced) >= 9, sorted(fenced)
    for name in fenced:
        body = statements[name]
        assert body.count(":token") == body.count("occ.claim_is_live(w, :token)"), name
        assert re.search(r"claim_token\s*=\s*:", body) is None, name  # no fence of its own
