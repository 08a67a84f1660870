"""An Agent's own NetworkPolicies: the runtime ingress from the allowed callers only, the
authentication egress that only moves forward, all valid for the supported versions."""

from __future__ import annotations

import uuid

import pytest

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import agent_policies, naming
from tests.support import kubernetes_schemas

SUPPORTED_VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34")
CALLERS = (
    {"namespace": {"kubernetes.io/metadata.name": "occ-system"}, "pods": {"app": "occ-api"}},
    {"pods": {"occ.dev/caller": "true"}},
)
CIDRS = ("10.20.0.0/16", "192.0.2.10/32")
AGENT = f"agt_{uuid.uuid4()}"


def _revision(number: int) -> base.RevisionSpec:
    return base.RevisionSpec(
        namespace_id=f"ns_{uuid.uuid4()}",
        agent_id=AGENT,
        revision_id=f"rev_{uuid.uuid4()}",
        revision_number=number,
        configuration_generation=1,
        configuration_document={},
        harness_id="openclaw",
        harness_version="1.0.0",
        harness_mode="embedded",
        service_principal_id=f"prn_{uuid.uuid4()}",
    )


def test_the_runtime_policy_admits_only_the_callers_on_the_gateway_port() -> None:
    revision = _revision(1)
    policy = agent_policies.runtime(revision, "occ-a", CALLERS, 8080)
    assert policy["spec"]["podSelector"]["matchLabels"] == {
        naming.AGENT_ID: AGENT,
        naming.ROLE: naming.Role.GATEWAY,
        naming.REVISION_ID: revision.revision_id,
    }
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [
        {
            "from": [
                {
                    "namespaceSelector": {
                        "matchLabels": {"kubernetes.io/metadata.name": "occ-system"}
                    },
                    "podSelector": {"matchLabels": {"app": "occ-api"}},
                },
                {"podSelector": {"matchLabels": {"occ.dev/caller": "true"}}},
            ],
            "ports": [{"protocol": "TCP", "port": 8080}],
        }
    ]
    assert agent_policies.runtime(revision, "occ-a", (), 8080)["spec"]["ingress"] == []


def test_the_authentication_egress_opens_to_the_cidrs_only_and_closes_to_nothing() -> None:
    revision = _revision(3)
    opened = agent_policies.authentication(revision, "occ-a", CIDRS, open_egress=True)
    assert opened["spec"]["policyTypes"] == ["Egress"]
    assert opened["spec"]["egress"] == [
        {
            "to": [{"ipBlock": {"cidr": cidr}} for cidr in CIDRS],
            "ports": [{"protocol": "TCP", "port": 443}],
        }
    ]
    assert opened["spec"]["podSelector"]["matchLabels"][naming.REVISION_ID] == revision.revision_id
    closed = agent_policies.authentication(revision, "occ-a", CIDRS, open_egress=False)
    assert closed["spec"]["egress"] == []
    assert agent_policies.position(opened) == (3, 0)
    assert agent_policies.position(closed) == (3, 1)


@pytest.mark.parametrize(
    ("held", "number", "open_egress", "moves"),
    [
        ((2, True), 3, True, True),  # a successor takes it over
        ((2, False), 3, True, True),
        ((3, True), 3, False, True),  # its revision closes it once active
        ((3, True), 2, True, False),  # a superseded revision never takes it back
        ((3, True), 2, False, False),  # nor closes its successor's
        ((3, False), 3, True, False),  # closed stays closed for the same revision
        ((3, True), 3, True, False),  # nothing to do
    ],
)
def test_the_authentication_egress_only_moves_forward(
    held: tuple[int, bool], number: int, open_egress: bool, moves: bool
) -> None:
    current = agent_policies.authentication(_revision(held[0]), "n", CIDRS, open_egress=held[1])
    assert (
        agent_policies.moves_forward(current, _revision(number), open_egress=open_egress) is moves
    )


def test_an_unreadable_position_is_taken_over() -> None:
    current = agent_policies.authentication(_revision(5), "n", CIDRS, open_egress=True)
    current["metadata"]["annotations"][agent_policies.REVISION_NUMBER_ANNOTATION] = "x"
    assert agent_policies.moves_forward(current, _revision(1), open_egress=True)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_policies_validate_strictly(version: str) -> None:
    revision = _revision(1)
    for manifest in (
        agent_policies.runtime(revision, "occ-a", CALLERS, 8080),
        agent_policies.runtime(revision, "occ-a", (), 8080),
        agent_policies.authentication(revision, "occ-a", CIDRS, open_egress=True),
        agent_policies.authentication(revision, "occ-a", (), open_egress=False),
    ):
        kubernetes_schemas.validate(manifest, version)
