"""``occ`` starts without the server's libraries and still lists and runs every command.

The client's commands run in a fresh interpreter, and what it imported is read at exit: none
of SQLAlchemy, Alembic, Celery, Flask, kombu or marshmallow, nor ``http.client``, ``email`` or
``ssl`` (the client speaks plain HTTP on a socket). ``occ --help`` shows each server
command with its own help though it is not loaded; naming one loads it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from occ.cli import root
from tests.support import processes, servers

HEAVY = ("sqlalchemy", "alembic", "celery", "flask", "kombu", "marshmallow", "yaml")
# urllib.request's own imports, most of a client command's start (http: http.client)
HTTP_STACK = ("http", "email", "ssl")

_PROBE = """
import atexit, json, sys
heavy = {heavy!r}
atexit.register(lambda: print(json.dumps(sorted(
    name for name in sys.modules if name.split(".")[0] in heavy
)), file=sys.stderr))
from occ.cli import main
main()
"""


def _imports_of(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    environment = processes.clean_environment()
    environment.update(
        {
            "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "OCC_URL": f"http://127.0.0.1:{servers.free_port()}",  # nothing listens there
            "OCC_API_KEY": "occ_key_secret",
        }
    )
    ran = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=HEAVY + HTTP_STACK), *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )
    loaded = json.loads(ran.stderr.strip().splitlines()[-1])
    assert isinstance(loaded, list)
    return ran, loaded


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("-h",),
        ("agents", "list", "-n", "team-a"),
        ("agents", "get", "helper", "-n", "team-a", "-o", "json"),
        ("namespaces", "list", "-h"),
    ],
)
def test_a_client_command_imports_no_server_library(tmp_path: Path, args: tuple[str, ...]) -> None:
    ran, loaded = _imports_of(tmp_path, *args)
    assert loaded == [], (args, loaded)
    if "-h" in args or "--help" in args:
        assert ran.returncode == 0 and "Usage: occ" in ran.stdout, ran
    else:  # it did run: it tried the API
        assert ran.returncode == 2 and "UNREACHABLE" in ran.stderr, ran


@pytest.mark.parametrize("name", sorted(root.SERVER_COMMANDS))
def test_each_server_command_is_listed_with_its_own_help(name: str) -> None:
    command = root.SERVER_COMMANDS[name].load()
    assert command.get_short_help_str(limit=1_000) == root.SERVER_COMMANDS[name].summary


@pytest.mark.parametrize("path", sorted(root.SERVER_SUBCOMMANDS), ids=" ".join)
def test_each_server_subcommand_is_listed_with_its_own_help(path: tuple[str, str]) -> None:
    command = root.SERVER_SUBCOMMANDS[path].load()
    assert command.get_short_help_str(limit=1_000) == root.SERVER_SUBCOMMANDS[path].summary
    listed = CliRunner().invoke(root.cli, [path[0], "-h"])
    assert f"\n  {path[1]} " in listed.output
    own = CliRunner().invoke(root.cli, [*path, "-h"])
    assert own.exit_code == 0 and "--before" in own.output, own.output


def test_help_lists_every_command_and_a_server_command_loads_when_named() -> None:
    runner = CliRunner()
    listed = runner.invoke(root.cli, ["-h"])
    assert listed.exit_code == 0, listed.output
    for name in (*root.SERVER_COMMANDS, "agents", "namespaces", "login", "version"):
        assert f"\n  {name} " in listed.output, name
    database = runner.invoke(root.cli, ["db", "-h"])
    assert database.exit_code == 0, database.output
    assert "upgrade" in database.output and "check" in database.output
    context = click.Context(root.cli)
    assert isinstance(root.cli.get_command(context, "db"), click.Group)
    assert root.cli.get_command(context, "no-such-command") is None
