"""Label and field selectors as the apiserver parses and matches them on list requests.

Models ``labelSelector`` (``=``, ``==``, ``!=``, ``in``, ``notin``, ``key``, ``!key``; a
comma means AND) and ``fieldSelector`` on ``metadata.name`` / ``metadata.namespace``. It
must not know about storage; a malformed selector is a 400 ``BadRequest``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tests.support.kube_api import errors

Match = Callable[[Mapping[str, str]], bool]

_SET_REQUIREMENT = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^()]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


def _split_requirements(selector: str) -> list[str]:
    """Split on the commas that separate requirements (not those inside ``in (a,b)``)."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part for part in parts if part.strip()]


def _requirement(text: str) -> Match:
    found = _SET_REQUIREMENT.match(text)
    if found:
        key, operator, raw_values = found.groups()
        values = {value.strip() for value in raw_values.split(",") if value.strip()}
        if operator == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    found = _EQUALITY.match(text)
    if found:
        key, operator, value = found.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    found = _EXISTS.match(text)
    if found:
        negated, key = found.groups()
        if negated:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise errors.bad_request(f"unable to parse requirement: {text.strip()!r}")


def parse_label_selector(selector: str | None) -> Match:
    """A predicate over an object's labels; an empty selector matches everything."""
    requirements = [_requirement(part) for part in _split_requirements(selector or "")]
    return lambda labels: all(requirement(labels) for requirement in requirements)


def parse_field_selector(selector: str | None) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate over an object; only ``metadata.name`` and ``metadata.namespace`` exist."""
    checks: list[Callable[[Mapping[str, Any]], bool]] = []
    for part in _split_requirements(selector or ""):
        found = _EQUALITY.match(part)
        if not found:
            raise errors.bad_request(f"invalid field selector: {part.strip()!r}")
        field, operator, value = found.groups()
        if field not in ("metadata.name", "metadata.namespace"):
            raise errors.bad_request(f'field label not supported: "{field}"')
        attribute = field.split(".", 1)[1]
        negated = operator == "!="

        def check(
            obj: Mapping[str, Any],
            attribute: str = attribute,
            value: str = value,
            negated: bool = negated,
        ) -> bool:
            actual = obj.get("metadata", {}).get(attribute, "")
            return bool(actual != value) if negated else bool(actual == value)

        checks.append(check)
    return lambda obj: all(check(obj) for check in checks)


def selector_from_match_labels(match_labels: Mapping[str, str]) -> str:
    """The string form of an equality-only selector (what a Scale status reports)."""
    return ",".join(f"{key}={value}" for key, value in sorted(match_labels.items()))


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a structured ``LabelSelector`` (matchLabels / matchExpressions) selects labels."""
    if not selector:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key")
        operator = expression.get("operator")
        values = set(expression.get("values") or [])
        present = key in labels
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and present and labels.get(key) in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
