"""``occ agents logs NAME``: an Agent's runtime log, streamed to stdout as the API reads it.

``--tail`` lines back (the API's default: 100), ``--since`` a duration or a time, ``-f`` keeps
reading new lines until Ctrl-C: the API ends one follow after a few minutes, and the command
then reads on from that moment (``tail=0``), so a line written in between may be missed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Mapping
from typing import Final

import click

from occ.client import http
from occ.client import session as shared

FOLLOW_READ_TIMEOUT_S: Final = 330.0
"""How long a follow waits for a line: past the API's own bound on one follow (300 s)."""
MIN_FOLLOW_S: Final = 1.0
"""A follow that ended sooner is read again only after this long (no busy loop)."""


@click.command("logs")
@click.argument("name")
@shared.namespace_option
@click.option("-f", "--follow", is_flag=True, help="Keep streaming new lines until Ctrl-C.")
@click.option(
    "--since",
    default=None,
    metavar="DURATION|TIME",
    help="Only lines since then: 10m, 1h30m, or an RFC 3339 time.",
)
@click.option(
    "--tail",
    type=click.IntRange(min=0, max=10_000),
    default=None,
    help="Lines back from the end to start with (default: 100).",
)
@shared.pass_session
def agent_logs(
    session: shared.Session,
    *,
    name: str,
    namespace: str | None,
    follow: bool,
    since: str | None,
    tail: int | None,
) -> None:
    """Print the Agent's runtime (gateway) log, secret values redacted."""
    path = shared.member_path(session, namespace, "agents", name) + "/logs"
    query: dict[str, object] = {"tail": tail, "since": since, "follow": "true" if follow else None}
    try:
        while True:
            started = time.monotonic()
            for line in lines(session.client, path, query, follow=follow):
                sys.stdout.write(line)
                if follow:
                    sys.stdout.flush()
            if not follow:
                return
            # the API ended this follow (its bound): read on from now
            query = {"tail": 0, "follow": "true"}
            time.sleep(max(MIN_FOLLOW_S - (time.monotonic() - started), 0.0))
    except KeyboardInterrupt:
        sys.stdout.flush()
        raise SystemExit(130) from None


def lines(
    client: http.Client, path: str, query: Mapping[str, object], *, follow: bool
) -> Iterator[str]:
    """The lines the API streams for ``GET path?query`` (``ApiError`` for a problem)."""
    # urllib.request loads http.client, email and ssl: only a command that calls pays
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    pairs = {key: str(value) for key, value in query.items() if value is not None}
    target = client.url.rstrip("/") + path + ("?" + urllib.parse.urlencode(pairs) if pairs else "")
    request = urllib.request.Request(  # noqa: S310 - check_url admitted http(s) only
        target,
        headers={
            "Authorization": f"Bearer {client.key}",
            "Accept": "text/plain, application/problem+json",
            "User-Agent": http.USER_AGENT,
        },
    )
    timeout = FOLLOW_READ_TIMEOUT_S if follow else client.timeout_s
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            for raw in response:
                yield raw.decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        headers = {name.lower(): value for name, value in error.headers.items()}
        raise http.problem(error.code, error.read(), headers) from None
    except (TimeoutError, urllib.error.URLError, ConnectionError) as error:
        reason = getattr(error, "reason", error)
        raise http.ApiError(
            "UNREACHABLE", f"cannot reach the API at {client.url}: {reason}"
        ) from None
