"""Who published an item, and whether a newer claim had begun before it did."""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable, Mapping

from tests.chaos.effects import Interval

KILL_SLACK_S = 1.0
"""How long after its process's kill a statement it sent may still commit."""


def publishing_attempts(logs: Iterable[str]) -> dict[str, list[int]]:
    """Per work id, the attempts whose pass a worker logged as a success (``worker.completed``,
    outcome ``success``): which claim published, as the publishing worker itself knew it. The
    publication's audit cannot say: its ``attemptCount`` is the row's, which a stale publisher
    would read as the newest claim's."""
    found: dict[str, list[int]] = collections.defaultdict(list)
    for text in logs:
        for line in text.splitlines():
            if '"worker.completed"' not in line:
                continue
            try:
                event = json.loads(line[line.index("{") :])
            except ValueError:
                continue  # a line cut by a kill
            if event.get("event") == "worker.completed" and event.get("outcome") == "success":
                found[str(event.get("workId"))].append(int(event.get("attempt", 0)))
    return dict(found)


def stale_publication(
    work_id: str,
    effects: list[Interval],
    published_at: float,
    killed_at: Mapping[int, float],
    publisher_attempt: int | None = None,
) -> list[str]:
    """A publication is stale when a claim newer than its publisher had begun its effects.

    With the publisher's attempt (its worker's ``worker.completed``) and attempts in the
    journal, any effect of a later attempt makes it stale: a later claim exists only once the
    publisher's claim was gone, and none after the item is terminal. Among the effects of the
    publisher's own attempt number (a released claim's attempt is refunded, so two claims can
    share one), and without attempts, the publisher is the token of the last effect done before
    the publication by a process still alive then (a process killed before it published
    nothing); a newer claim's effect starting between that token's first effect and the
    publication makes it stale. Without the publisher's attempt, a publishing claim that
    journalled no effect is not seen: the last claim before it is taken for the publisher."""
    if publisher_attempt and all(i.attempt for i in effects):
        later = [i for i in effects if i.attempt > publisher_attempt]
        if later:
            return [
                f"{work_id}: published at {published_at:.2f} by attempt {publisher_attempt}"
                f" after attempt {later[0].attempt} began (effects: {_history(effects)})"
            ]
        effects = [i for i in effects if i.attempt == publisher_attempt]
    done = [
        i
        for i in effects
        if i.outcome == "done"
        and (i.ended or 0) <= published_at + 0.5
        and killed_at.get(i.pid, float("inf")) > published_at - KILL_SLACK_S
    ]
    if not done:
        return []
    publisher = done[-1].token
    first = min(i.started for i in effects if i.token == publisher)
    newer = [i for i in effects if i.token != publisher and first < i.started < published_at]
    if not newer:
        return []
    return [
        f"{work_id}: published at {published_at:.2f} by a token older than"
        f" {newer[0].token[:8]} (effects: {_history(effects)})"
    ]


def _history(effects: list[Interval]) -> str:
    return "; ".join(i.describe() for i in effects)
