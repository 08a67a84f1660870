"""The reference Sandbox Driver: the pinned policy, and the launch it allows or refuses."""

from __future__ import annotations

import threading

import pytest

from occ.drivers.compute import base, hooks, launch
from occ.drivers.sandbox import reference
from tests.support import specs

OPERATION = base.Operation(work_id="w", claim_token="", abort=threading.Event())


def test_transform_pins_the_policy_in_a_copy() -> None:
    sandbox = reference.ReferenceSandbox(["api.example.com", "*.models.example"])
    native = {"model": "m", "sandbox": {"egress": {"allow": ["*"]}}}
    transformed = sandbox.transform(native)
    assert transformed["sandbox"] == {
        "driver": "reference",
        "egress": {"allow": ["*.models.example", "api.example.com"]},
        "workspace": {"readOnly": True},
    }
    assert transformed["model"] == "m"
    assert native["sandbox"] == {"egress": {"allow": ["*"]}}  # the native document is untouched


def test_a_revision_admitted_under_the_policy_gets_valid_placeholders() -> None:
    sandbox = reference.ReferenceSandbox(["api.example.com"])
    revision = specs.revision(configuration_document=sandbox.transform({"model": "m"}))
    dispatcher = hooks.HookDispatcher([sandbox])
    environment = dispatcher.before_workload_start(OPERATION, revision)
    assert environment == {
        "SANDBOX_PROFILE": sandbox.profile,
        "SANDBOX_WORKSPACE": "opaque-workspace:read-only",
    }
    launch.validate_environment(environment)


@pytest.mark.parametrize(
    "document",
    [
        {"model": "m"},
        {"model": "m", "sandbox": {"driver": "reference", "egress": {"allow": ["*"]}}},
    ],
)
def test_a_revision_without_exactly_this_policy_is_refused(document: dict[str, object]) -> None:
    sandbox = reference.ReferenceSandbox(["api.example.com"])
    revision = specs.revision(configuration_document=document)
    with pytest.raises(base.PermanentDriverError) as raised:
        hooks.HookDispatcher([sandbox]).before_workload_start(OPERATION, revision)
    assert raised.value.code == reference.POLICY_MISSING


def test_another_allow_list_is_another_profile() -> None:
    one = reference.ReferenceSandbox(["a.example"])
    other = reference.ReferenceSandbox(["b.example"])
    assert one.profile != other.profile
    assert launch.PLACEHOLDER_VALUE.fullmatch(one.profile)
