"""``occ.client.session``: how a client command's failures end."""

from __future__ import annotations

import click
from click.testing import CliRunner

from occ.client import http, session


def test_a_file_error_in_a_client_command_is_one_line_with_exit_2() -> None:
    @click.group(cls=session.ClientGroup)
    def group() -> None:
        pass

    @group.command()
    def write() -> None:
        raise PermissionError(13, "Permission denied", "/somewhere/file")

    ran = CliRunner().invoke(group, ["write"])
    assert ran.exit_code == 2
    assert ran.output == "occ: error: OS_ERROR: /somewhere/file: Permission denied\n"


def test_a_server_error_ends_with_its_request_id() -> None:
    @click.group(cls=session.ClientGroup)
    def group() -> None:
        pass

    @group.command()
    def read() -> None:
        raise http.ApiError("INTERNAL", "it broke", 500, request_id="req_1")

    ran = CliRunner().invoke(group, ["read"])
    assert (ran.exit_code, ran.output) == (2, "occ: error: INTERNAL: it broke (request req_1)\n")
