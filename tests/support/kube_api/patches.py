"""The PATCH flavours the apiserver accepts, applied to plain JSON objects.

Models RFC 7386 merge patch (``null`` deletes), strategic merge patch (simplified: treated
as a merge patch, so lists are replaced rather than merged by key), RFC 6902 JSON patch
(``add``, ``replace``, ``remove``, ``test``) and the body parsing of server-side apply
(JSON or YAML). Pure functions on copies; they must not know about storage or metadata.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from tests.support.kube_api import errors

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE, STRATEGIC, JSON_PATCH, APPLY)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` removes a member, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue  # strategic-merge directives: this simplified server ignores them
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch(f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _invalid_patch(message: str) -> errors.ApiError:
    return errors.ApiError(422, "Invalid", f"the server rejected our request: {message}")


def _index(container: list[Any], token: str, *, appending: bool) -> int:
    if appending and token == "-":
        return len(container)
    if not token.isdigit():
        raise _invalid_patch(f"invalid array index {token!r}")
    index = int(token)
    limit = len(container) if appending else len(container) - 1
    if index > limit:
        raise _invalid_patch(f"array index {index} out of bounds")
    return index


def _parent(document: Any, tokens: list[str]) -> Any:
    node = document
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, appending=False)]
        else:
            raise _invalid_patch(f"path component {token!r} does not exist")
    return node


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 with ``add``, ``replace``, ``remove`` and ``test``; a bad operation is 422."""
    if not isinstance(operations, list):
        raise errors.bad_request("a JSON patch must be a list of operations")
    document = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict) or "path" not in operation:
            raise _invalid_patch(f"malformed operation {operation!r}")
        op = operation.get("op")
        tokens = _pointer(str(operation["path"]))
        if not tokens:
            if op in ("add", "replace"):
                document = copy.deepcopy(operation.get("value"))
                continue
            raise _invalid_patch(f"cannot {op} the whole document")
        parent = _parent(document, tokens)
        last = tokens[-1]
        if op == "test":
            current = (
                parent.get(last)
                if isinstance(parent, dict)
                else parent[_index(parent, last, appending=False)]
            )
            if current != operation.get("value"):
                raise _invalid_patch(f"test failed at {operation['path']}")
        elif op in ("add", "replace"):
            value = copy.deepcopy(operation.get("value"))
            if isinstance(parent, dict):
                if op == "replace" and last not in parent:
                    raise _invalid_patch(f"replace of missing member {operation['path']}")
                parent[last] = value
            elif isinstance(parent, list):
                if op == "add":
                    parent.insert(_index(parent, last, appending=True), value)
                else:
                    parent[_index(parent, last, appending=False)] = value
            else:
                raise _invalid_patch(f"cannot {op} below a scalar at {operation['path']}")
        elif op == "remove":
            if isinstance(parent, dict) and last in parent:
                del parent[last]
            elif isinstance(parent, list):
                del parent[_index(parent, last, appending=False)]
            else:
                raise _invalid_patch(f"remove of missing member {operation['path']}")
        else:
            raise _invalid_patch(f"unsupported operation {op!r}")
    return document


def parse_body(raw: bytes, content_type: str | None) -> Any:
    """A request body: YAML (a superset of JSON) for apply, JSON for everything else."""
    if not raw:
        return None
    text = raw.decode("utf-8")
    if content_type == APPLY:
        return yaml.safe_load(text)
    return json.loads(text)


def patched(target: Any, patch: Any, content_type: str) -> Any:
    """The object after a non-apply patch of ``content_type``."""
    if content_type == JSON_PATCH:
        return json_patch(target, patch)
    if not isinstance(patch, dict):
        raise errors.bad_request("a merge patch must be a JSON object")
    return merge_patch(target, patch)
