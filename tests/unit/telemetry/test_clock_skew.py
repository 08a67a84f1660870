"""``ClockSkew``: the wall clock at the middle of the round trip minus the database clock,
exported as a gauge, and logged once per process past the threshold."""

from __future__ import annotations

import datetime as dt

import prometheus_client
import pytest

from occ.telemetry import clock_skew, observability

DATABASE_NOW = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def _exported() -> float | None:
    return prometheus_client.REGISTRY.get_sample_value("occ_clock_skew_seconds")


def _events(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    found = []
    for record in caplog.records:
        event = getattr(record, observability.EVENT_ATTRIBUTE, None)
        if event and event["event"] == "clock.skew":
            found.append(event)
    return found


def test_the_skew_is_measured_at_the_middle_of_the_round_trip() -> None:
    wall = DATABASE_NOW.timestamp() + 0.5  # the answer arrived 0.5 s after the database read
    skew = clock_skew.ClockSkew(wall=lambda: wall)

    measured = skew.record(DATABASE_NOW, round_trip_s=1.0)

    assert measured == pytest.approx(0.0)
    assert skew.skew_s == pytest.approx(0.0)
    assert _exported() == pytest.approx(0.0)


def test_a_skew_past_the_threshold_is_logged_once_and_exported_each_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    wall = DATABASE_NOW.timestamp() - 60
    skew = clock_skew.ClockSkew(wall=lambda: wall)

    skew.record(DATABASE_NOW, round_trip_s=0.0)
    skew.record(DATABASE_NOW, round_trip_s=0.0)
    wall += 1
    skew.record(DATABASE_NOW, round_trip_s=0.0)

    [event] = _events(caplog)
    assert event["skewMs"] == -60_000
    assert _exported() == pytest.approx(-59.0)


def test_a_small_skew_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    wall = DATABASE_NOW.timestamp() + clock_skew.WARN_AFTER_S * 0.9
    clock_skew.ClockSkew(wall=lambda: wall).record(DATABASE_NOW, round_trip_s=0.0)

    assert not _events(caplog)
