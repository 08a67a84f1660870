"""How a problem names invalid fields: a use case's domain path spelled as the API spells it,
the web layer's own and the settings' paths as they are."""

from __future__ import annotations

import pytest

from occ.foundation import errors
from occ.web import problems


@pytest.mark.parametrize(
    ("path", "pointer"),
    [
        ((), ""),
        (("name",), "/name"),
        (("harness_auth", "secret_id"), "/harnessAuth/secretId"),
        (("existing_namespace",), "/existingNamespace"),
        (("permissions", 1), "/permissions/1"),
        (("resource", "id"), "/resource/id"),
    ],
)
def test_a_use_cases_path_is_a_camel_case_pointer(path: errors.Path, pointer: str) -> None:
    error = errors.InvalidInput.at(path, "is wrong")
    [field] = error.errors
    assert problems.pointer(error, field) == pointer


@pytest.mark.parametrize(
    "error",
    [
        problems.InvalidRequest.at(("query", "namespace_id"), "unknown parameter"),
        errors.InvalidSettings.at(("lease_ms",), "must be a positive integer"),
    ],
)
def test_paths_named_as_written_are_answered_as_they_are(error: errors.InvalidInput) -> None:
    [field] = error.errors
    assert problems.pointer(error, field) == field.pointer
    assert "_" in problems.pointer(error, field)


def test_a_pointer_escapes_its_tokens() -> None:
    error = problems.InvalidRequest.at(("query", "a/b~c"), "unknown parameter")
    [field] = error.errors
    assert problems.pointer(error, field) == "/query/a~1b~0c"
    assert errors.json_pointer(["a/b", "~", 0]) == "/a~1b/~0/0"
