"""A draft Agent's fields, checked one by one into columns (an error names the field) and
described for the audit with ids only."""

from __future__ import annotations

import uuid

import pytest

from occ.controller import agent_drafts
from occ.controller import agents as agent_use_cases
from occ.foundation import errors, harnesses
from occ.state import agents

CONFIGURATION = f"cfg_{uuid.uuid4()}"
SECRET = f"sec_{uuid.uuid4()}"
ACCOUNT = f"acc_{uuid.uuid4()}"


def _columns(**fields: object) -> dict[str, object]:
    update = agent_use_cases.UpdateAgent(
        namespace_id=f"ns_{uuid.uuid4()}",
        agent_id=f"agt_{uuid.uuid4()}",
        **fields,  # type: ignore[arg-type]
    )
    return agent_drafts.draft_columns(update)


def test_only_the_given_fields_become_columns_and_a_source_clears_the_other() -> None:
    assert _columns() == {}
    assert _columns(configuration_id=CONFIGURATION) == {"configuration_id": CONFIGURATION}
    account = _columns(harness_auth=agents.HarnessAuth(kind="managedAccount", account_id=ACCOUNT))
    assert account == {"harness_auth_secret_id": None, "harness_auth_account_id": ACCOUNT}
    secret = _columns(harness_auth=agents.HarnessAuth(kind="secret", secret_id=SECRET))
    assert secret == {"harness_auth_secret_id": SECRET, "harness_auth_account_id": None}


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"harness": agents.Harness(id="openclaw", version="1 0")}, ("harness", "version")),
        ({"configuration_id": "sec_not-a-configuration"}, ("configuration_id",)),
        (
            {"harness_auth": agents.HarnessAuth(kind="secret", secret_id="cfg_x")},
            ("harness_auth", "secret_id"),
        ),
    ],
)
def test_a_bad_field_is_refused_at_its_path(
    fields: dict[str, object], path: tuple[str, ...]
) -> None:
    with pytest.raises(errors.InvalidInput) as refused:
        _columns(**fields)
    assert [error.path for error in refused.value.errors] == [path]


def test_the_execution_mode_must_be_the_harness_own() -> None:
    columns = _columns(
        harness=agents.Harness(id="codex", version="1"),
        execution_mode=harnesses.ExecutionMode.EMBEDDED,
    )
    with pytest.raises(errors.InvalidInput) as refused:
        agent_drafts.check_execution_mode(columns, current=None)
    assert [error.path for error in refused.value.errors] == [("execution_mode",)]


def test_the_audit_description_holds_ids_in_camel_case() -> None:
    columns = _columns(
        name="helper",
        configuration_id=CONFIGURATION,
        harness=agents.Harness(id="openclaw", version="1.0.0"),
        harness_auth=agents.HarnessAuth(kind="secret", secret_id=SECRET),
    )
    assert agent_drafts.describe(columns) == {
        "name": "helper",
        "configurationId": CONFIGURATION,
        "harness": {"id": "openclaw", "version": "1.0.0"},
        "harnessAuth": {"kind": "secret", "secretId": SECRET},
    }
