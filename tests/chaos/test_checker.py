"""The chaos checker under clock skew: a stale publication is found when one of the two driver
workers journals with a wall clock a minute off, because effects are placed by their monotonic
readings; read by the workers' wall times the same journal would hide it or invent one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos import effects, publishers

WALL_MINUS_MONOTONIC = 1_800_000_000.0
WORK = "agent_revision:rev_1:deploy:1"


def _effect(
    token: str, pid: int, started: float, ended: float, offset_s: int
) -> list[dict[str, Any]]:
    """A ``started`` and ``ended`` line as a worker whose wall clock is ``offset_s`` off writes
    them; ``started``/``ended`` are true monotonic readings."""
    wall_started = started + WALL_MINUS_MONOTONIC + offset_s
    common = {
        "op": "prepare_revision", "workId": WORK, "token": token, "pid": pid,
        "agentId": "agt_1", "startedAt": wall_started, "startedMonotonic": started,
    }  # fmt: skip
    ended_line = {
        **common, "phase": "ended", "outcome": "done",
        "endedAt": ended + WALL_MINUS_MONOTONIC + offset_s, "endedMonotonic": ended,
    }  # fmt: skip
    return [{**common, "phase": "started"}, ended_line]


def _stale_holder_publishes(skewed: str, offset_s: int) -> list[dict[str, Any]]:
    """The old claim's effect ends at 0.15 s, the new claim's effect starts at 3 s and is still
    running when the old claim publishes at 4 s: a stale publication. ``skewed`` says which
    holder's worker has the shifted clock."""
    return [
        *_effect("old", 100, 0.0, 0.15, offset_s if skewed == "old" else 0),
        *_effect("new", 200, 3.0, 5.0, offset_s if skewed == "new" else 0),
    ]


@pytest.mark.parametrize("offset_s", [60, -60])
@pytest.mark.parametrize("skewed", ["old", "new"])
def test_a_stale_publication_is_found_whichever_worker_is_skewed(
    skewed: str, offset_s: int
) -> None:
    entries = _stale_holder_publishes(skewed, offset_s)
    clock = effects.JournalClock(WALL_MINUS_MONOTONIC)
    found = effects.intervals(entries, {}, {}, clock)
    published_at = WALL_MINUS_MONOTONIC + 4.0
    (stale,) = publishers.stale_publication(WORK, found, published_at, {})
    assert stale.startswith(f"{WORK}: published at {published_at:.2f} by a token older than new")
    assert clock.offsets(entries) == {**{0: 1}, offset_s: 1}


@pytest.mark.parametrize(
    ("skewed", "offset_s", "misread"),
    [
        ("old", 60, []),  # the old claim's effect seems to end after the publication: hidden
        ("new", -60, ["a token older than old"]),  # the wrong holder
    ],
)
def test_the_workers_wall_times_would_misread_it(
    skewed: str, offset_s: int, misread: list[str]
) -> None:
    """Why the checker does not read ``startedAt``: taken as true, the shifted wall times move
    one effect a minute away, and the stale publication is missed or blamed on the wrong
    claim."""
    entries = _stale_holder_publishes(skewed, offset_s)
    as_if_true = [
        {**e, "startedMonotonic": e["startedAt"] - WALL_MINUS_MONOTONIC}
        | ({"endedMonotonic": e["endedAt"] - WALL_MINUS_MONOTONIC} if "endedAt" in e else {})
        for e in entries
    ]
    found = effects.intervals(as_if_true, {}, {}, effects.JournalClock(WALL_MINUS_MONOTONIC))
    misreadings = publishers.stale_publication(WORK, found, WALL_MINUS_MONOTONIC + 4.0, {})
    assert len(misreadings) == len(misread)
    assert all(text in reading for text, reading in zip(misread, misreadings, strict=True))


def test_an_unskewed_journal_has_one_offset() -> None:
    entries = _stale_holder_publishes("old", 0)
    assert effects.JournalClock(WALL_MINUS_MONOTONIC).offsets(entries) == {0: 2}


def _killed_claim_then_a_publication_without_effects() -> list[dict[str, Any]]:
    """Seed 730514's revision: a claim prepares and defers itself, the next claim's prepare is
    killed with its process at 0.98 s, and a third claim publishes at 5.9 s with no effect."""
    return [
        *_effect("first", 300, 0.0, 0.18, 0),
        {
            "phase": "started", "op": "prepare_revision", "workId": WORK, "token": "killed",
            "pid": 300, "agentId": "agt_1", "startedAt": 0.63 + WALL_MINUS_MONOTONIC,
            "startedMonotonic": 0.63,
        },
    ]  # fmt: skip


def test_a_claim_whose_process_was_killed_is_not_taken_for_the_publisher() -> None:
    clock = effects.JournalClock(WALL_MINUS_MONOTONIC)
    killed_at = {300: WALL_MINUS_MONOTONIC + 0.77}
    found = effects.intervals(
        _killed_claim_then_a_publication_without_effects(), {}, killed_at, clock
    )
    published_at = WALL_MINUS_MONOTONIC + 5.9
    assert publishers.stale_publication(WORK, found, published_at, killed_at) == []
    # had the first claim's process lived on, the killed claim's effect would make it stale
    (stale,) = publishers.stale_publication(WORK, found, published_at, {})
    assert "a token older than killed" in stale
