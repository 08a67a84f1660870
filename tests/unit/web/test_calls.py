"""Views reach their use cases through typed calls: no function of the web layer takes an
untyped keyword bag (``**kwargs: Any``, or ``**kwargs`` without a type), which mypy could not
check against the use case it is forwarded to."""

from __future__ import annotations

import ast
from pathlib import Path

import occ.web

WEB = Path(occ.web.__file__).parent


def untyped_keyword_bags(source: str, filename: str) -> list[str]:
    """``<file>:<line> <function>`` for every function or lambda in ``source`` whose ``**``
    parameter is typed ``Any`` (however it is imported) or not typed at all."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        bag = node.args.kwarg
        if bag is None:
            continue
        annotation = bag.annotation
        untyped = annotation is None or (
            ast.unparse(annotation).rpartition(".")[2].strip("'\"") == "Any"
        )
        if untyped:
            name = getattr(node, "name", "<lambda>")
            found.append(f"{filename}:{node.lineno} {name}")
    return found


def test_the_check_finds_a_planted_bag() -> None:
    planted = (
        "import typing\n"
        "from typing import Any\n"
        "def call(use_case, **arguments: Any): ...\n"
        "def nested():\n"
        "    def view(**path: 'typing.Any'): ...\n"
        "forward = lambda **rest: rest\n"
        "def typed(**path: str): ...\n"
    )
    assert untyped_keyword_bags(planted, "planted.py") == [
        "planted.py:3 call",
        "planted.py:5 view",
        "planted.py:6 <lambda>",
    ]


def test_no_function_of_the_web_layer_takes_an_untyped_keyword_bag() -> None:
    modules = sorted(WEB.rglob("*.py"))
    assert len(modules) > 20  # the whole package was scanned, routes and schemas included
    found = [
        bag
        for module in modules
        for bag in untyped_keyword_bags(
            module.read_text(encoding="utf-8"), str(module.relative_to(WEB))
        )
    ]
    assert found == []
