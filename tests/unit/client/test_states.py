"""The client's copies of the API's states stay equal to the core's enums they repeat."""

from __future__ import annotations

import enum

import pytest

from occ.client import states
from occ.controller import deployment_status
from occ.state import agents, namespaces, values


@pytest.mark.parametrize(
    ("copy", "original"),
    [
        (states.NamespaceStatus, namespaces.NamespaceStatus),
        (states.DeploymentState, deployment_status.DeploymentState),
        (states.WorkState, values.WorkState),
        (states.DesiredRuntimeState, agents.DesiredRuntimeState),
    ],
)
def test_each_state_is_the_cores(copy: type[enum.StrEnum], original: type[enum.StrEnum]) -> None:
    assert {(m.name, m.value) for m in copy} == {(m.name, m.value) for m in original}
