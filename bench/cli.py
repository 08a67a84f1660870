"""Benchmark of the ``occ`` command's start: ``name=value`` lines.

Not a test: it asserts nothing, it measures. Side by side in one run, round after round (so a
busy machine slows every command alike), it times the wall clock of:

* **the baseline**: ``python -c pass`` on the same interpreter (what any Python command costs);
* ``occ --help``;
* ``occ agents list -n team-a``: a name lookup and a list, against a local HTTP server that
  answers the API's envelopes at once (the figure is the client's own time, not the API's).

stdout gets exactly::

    python_pass_median_s     the baseline's median wall time
    occ_help_median_s        ``occ --help``'s median (target <= 0.15 s)
    occ_list_median_s        ``occ agents list``'s median (target <= 0.15 s)
    occ_help_over_python_s   occ_help_median_s - python_pass_median_s
    occ_list_over_python_s   occ_list_median_s - python_pass_median_s
    occ_help_per_python      occ_help_median_s / python_pass_median_s
    occ_list_per_python      occ_list_median_s / python_pass_median_s

stderr gets the rounds and the figures against their target. On a machine whose
``python -c pass`` alone is slow (shared cores), read the "over python" figures: they are
what ``occ`` adds to any Python command.

    .venv/bin/python bench/cli.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import support

TARGET_S = 0.15
NAMESPACE_ID = "ns_00000000-0000-4000-8000-000000000001"


class _Api(http.server.BaseHTTPRequestHandler):
    """The two answers ``occ agents list -n team-a`` asks for, canned."""

    def do_GET(self) -> None:
        if self.path.startswith("/v1/namespaces?"):
            data: list[dict[str, Any]] = [{"id": NAMESPACE_ID, "name": "team-a"}]
        else:
            data = [
                {"id": f"agt_{index:08}", "name": f"agent-{index}", "status": "ready"}
                for index in range(20)
            ]
        body = json.dumps({"data": data, "meta": {"nextCursor": None}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _timed(argv: list[str], environment: dict[str, str]) -> float:
    started = time.perf_counter()
    ran = subprocess.run(argv, env=environment, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if ran.returncode != 0:
        raise support.BenchError(f"{argv[1:]} exited {ran.returncode}: {ran.stderr[-300:]!r}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    options = parser.parse_args(argv)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    occ = str(Path(sys.executable).with_name("occ"))
    commands = {
        "python_pass": [sys.executable, "-c", "pass"],
        "occ_help": [occ, "--help"],
        "occ_list": [occ, "agents", "list", "-n", "team-a"],
    }
    with tempfile.TemporaryDirectory() as home:
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "XDG_CONFIG_HOME": home,
            "OCC_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "OCC_API_KEY": "occ_benchkey_notasecret",
        }
        for argv_ in commands.values():  # warm the bytecode caches once
            _timed(argv_, environment)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(options.rounds):
            for name, argv_ in commands.items():
                times[name].append(_timed(argv_, environment))
            support.log(True, f"round {round_ + 1}/{options.rounds}")
    server.shutdown()
    median = {name: statistics.median(values) for name, values in times.items()}
    base = median["python_pass"]
    figures = {
        "python_pass_median_s": base,
        "occ_help_median_s": median["occ_help"],
        "occ_list_median_s": median["occ_list"],
        "occ_help_over_python_s": median["occ_help"] - base,
        "occ_list_over_python_s": median["occ_list"] - base,
        "occ_help_per_python": median["occ_help"] / base,
        "occ_list_per_python": median["occ_list"] / base,
    }
    for name, value in figures.items():
        support.figure(name, value, digits=3)
    for name in ("occ_help", "occ_list"):
        verdict = "within" if median[name] <= TARGET_S else "over"
        support.say(
            f"{name}: median {median[name]:.3f} s ({verdict} the {TARGET_S} s target), "
            f"{median[name] - base:+.3f} s over python -c pass ({base:.3f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
