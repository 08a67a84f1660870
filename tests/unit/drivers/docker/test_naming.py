"""The docker driver's names: the gateway pattern matches gateways and nothing else occ names."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from occ.drivers.compute.docker import naming


@given(st.text(min_size=1))
def test_every_gateway_name_matches_the_gateway_pattern(revision_id: str) -> None:
    assert naming.GATEWAY_NAME.fullmatch(naming.gateway(revision_id))


@given(st.text(min_size=1))
def test_no_other_name_occ_gives_matches_it(some_id: str) -> None:
    others = [
        naming.network(some_id),
        naming.snapshot(some_id),
        naming.snapshot_writer(some_id),
        naming.agent_alias(some_id),
        naming.revision_alias(some_id),
        naming.gateway(some_id) + "-writer",
    ]
    assert not any(naming.GATEWAY_NAME.fullmatch(name) for name in others)
