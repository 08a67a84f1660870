"""Who published: the publishing worker's own ``worker.completed`` names its claim's attempt,
so a publication is judged against the journal's attempts instead of a guess from its tokens."""

from __future__ import annotations

import json

from tests.chaos import publishers
from tests.chaos.effects import Interval

WORK = "agent_revision:rev_1:deploy:1"
PUBLISHED_AT = 6.0


def _effect(token: str, attempt: int, started: float, ended: float | None, pid: int) -> Interval:
    outcome = "done" if ended is not None else "killed"
    return Interval("agt_1", WORK, token, started, ended, outcome, "prepare_revision", pid, attempt)


def _seed_730514() -> list[Interval]:
    """A claim prepares and defers itself; the next claim's prepare is cut short (its process
    killed, or stopped and left behind); a third claim publishes without an effect."""
    return [_effect("first", 1, 0.0, 0.18, 300), _effect("second", 2, 0.63, None, 300)]


def test_a_publisher_without_effects_after_a_living_holder_is_not_misread() -> None:
    # from the tokens alone the first claim looks like the publisher and the second like a
    # newer claim it overlooked; the third claim's attempt settles it
    assert publishers.stale_publication(WORK, _seed_730514(), PUBLISHED_AT, {}, None) != []
    assert publishers.stale_publication(WORK, _seed_730514(), PUBLISHED_AT, {}, 3) == []


def test_a_publisher_older_than_a_journalled_claim_is_stale_without_effects() -> None:
    (stale,) = publishers.stale_publication(WORK, _seed_730514(), PUBLISHED_AT, {}, 1)
    assert stale.startswith(f"{WORK}: published at 6.00 by attempt 1 after attempt 2 began")


def test_claims_sharing_a_refunded_attempt_are_told_apart_by_their_tokens() -> None:
    """A released claim's attempt is refunded: the next claim has the same number. The older
    one publishing after the newer one began is stale."""
    effects = [_effect("released", 1, 0.0, 0.2, 300), _effect("next", 1, 3.0, 5.0, 400)]
    (stale,) = publishers.stale_publication(WORK, effects, 4.0, {}, 1)
    assert "a token older than next" in stale
    assert publishers.stale_publication(WORK, effects, PUBLISHED_AT, {}, 1) == []


def test_the_publishers_attempts_are_read_from_the_workers_success_events() -> None:
    def event(work_id: str, attempt: int, outcome: str) -> str:
        fields = {"event": "worker.completed", "workId": work_id, "attempt": attempt}
        return "[pid 7] " + json.dumps({**fields, "outcome": outcome})

    drivers_a = "\n".join(
        [
            event(WORK, 1, "pending"),  # a deferred pass publishes nothing
            event(WORK, 3, "success"),
            'celery WARNING: {"event": "worker.completed", "workId": "cut',  # killed mid-line
            json.dumps({"event": "worker.claimed", "workId": WORK, "attempt": 4}),
        ]
    )
    drivers_b = event("ns:ns_1:ready", 1, "success")

    assert publishers.publishing_attempts([drivers_a, drivers_b]) == {
        WORK: [3],
        "ns:ns_1:ready": [1],
    }
