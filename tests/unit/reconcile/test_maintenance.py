"""How repairs of a runtime that stays degraded are spaced (``maintenance.repair_spacing_ms``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from occ.reconcile import maintenance

MINUTE = 60_000


def test_repairs_space_out_by_doubling_up_to_sixteen_intervals() -> None:
    spacing = [maintenance.repair_spacing_ms(MINUTE, repairs) for repairs in range(1, 9)]

    assert spacing == [MINUTE * n for n in (1, 2, 4, 8, 16, 16, 16, 16)]


@given(interval_ms=st.integers(min_value=1, max_value=86_400_000), repairs=st.integers(0, 10**6))
def test_the_spacing_is_between_one_and_sixteen_intervals(interval_ms: int, repairs: int) -> None:
    assert interval_ms <= maintenance.repair_spacing_ms(interval_ms, repairs) <= 16 * interval_ms
