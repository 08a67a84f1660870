"""What the benchmark scripts share: progress on stderr, nearest-rank percentiles, probing a
local HTTP port, and the ``name=value`` figures on stdout (the standard library only, so that
every script can import it)."""

from __future__ import annotations

import http.client
import math
import sys
from collections.abc import Iterable, Mapping


class BenchError(RuntimeError):
    """The benchmark could not measure (a process died, something never finished)."""


def say(message: str) -> None:
    """One line on stderr, at once."""
    print(message, file=sys.stderr, flush=True)


def log(verbose: bool, message: str) -> None:
    """A progress line (``# message``) on stderr, with ``-v`` only."""
    if verbose:
        say(f"# {message}")


def percentile(values: Iterable[float], fraction: float) -> float:
    """Nearest-rank percentile (NaN of nothing)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(math.ceil(fraction * len(ordered)) - 1, 0)]


def answers(port: int, path: str, *, timeout: float) -> bool:
    """Whether ``GET path`` on 127.0.0.1:``port`` answers 200."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def figure(name: str, value: float, digits: int = 1) -> None:
    """One ``name=value`` line on stdout, at once."""
    print(f"{name}={value:.{digits}f}", flush=True)


def report(figures: Mapping[str, float], summary: Iterable[str]) -> None:
    """The figures on stdout (one decimal, or four significant digits below 10, so that a
    per-item cost such as 0.0054 does not print as 0.0), then the summary's lines on stderr."""
    for name, value in figures.items():
        if value != 0 and abs(value) < 10:
            print(f"{name}={value:.4g}", flush=True)
        else:
            figure(name, value)
    for line in summary:
        say(line)
