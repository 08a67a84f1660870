"""The query of an Agent's runtime log read: ``tail``, ``since`` and ``follow``."""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

import marshmallow as ma
from marshmallow import fields, validate

from occ.controller import agent_logs

_DURATION: Final = re.compile(r"(?:(\d{1,7})h)?(?:(\d{1,7})m)?(?:(\d{1,7})s)?")
MAX_SINCE: Final = dt.timedelta(days=366)


def moment(value: str) -> dt.datetime:
    """The time ``since`` names: a duration back from now (``90s``, ``10m``, ``1h30m``) or an
    RFC 3339 time with its zone; ``ValidationError`` otherwise."""
    match = _DURATION.fullmatch(value)
    if match is not None and any(match.groups()):
        hours, minutes, seconds = (int(part or 0) for part in match.groups())
        back = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
        if back > MAX_SINCE:
            raise ma.ValidationError("must be at most 366 days back")
        return dt.datetime.now(dt.UTC) - back
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ma.ValidationError("must be a duration such as 10m or an RFC 3339 time") from None
    if parsed.tzinfo is None:
        raise ma.ValidationError("an RFC 3339 time must carry its zone (Z or +hh:mm)")
    return parsed


def _valid_since(value: str) -> None:
    moment(value)


class LogsQuery(ma.Schema):
    """Query parameters are a closed set: an unknown one is an error."""

    class Meta:
        unknown = ma.RAISE

    tail = fields.Integer(
        strict=False,
        load_default=agent_logs.DEFAULT_TAIL,
        validate=validate.Range(min=0, max=agent_logs.MAX_TAIL),
        metadata={"description": "Lines back from the end to start with."},
    )
    since = fields.String(
        validate=_valid_since,
        metadata={
            "description": "Only lines since then: a duration back from now (``10m``, "
            "``1h30m``) or an RFC 3339 time.",
            "example": "10m",
        },
    )
    follow = fields.Boolean(
        load_default=False,
        metadata={
            "description": "Keep the answer open and stream new lines, for at most "
            f"{int(agent_logs.MAX_FOLLOW_S)} s (read again to go on)."
        },
    )
