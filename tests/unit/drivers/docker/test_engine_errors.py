"""The Docker Engine's refusals become driver errors that keep the engine's HTTP status (the
pass's ``worker.completed`` reports it), never its request body."""

from __future__ import annotations

import docker.errors
import pytest
import requests

from occ.drivers.compute import base
from occ.drivers.compute.docker import engine


def _refused(status: int) -> docker.errors.APIError:
    response = requests.Response()
    response.status_code = status
    response.reason = "refused"
    return docker.errors.APIError("refused", response=response, explanation="no such image")


@pytest.mark.parametrize(
    ("status", "kind", "code"),
    [
        (500, base.TransientDriverError, engine.UNAVAILABLE),
        (429, base.TransientDriverError, engine.UNAVAILABLE),
        (400, base.PermanentDriverError, engine.REJECTED),
    ],
)
def test_an_engine_refusal_keeps_its_http_status(
    status: int, kind: type[base.DriverError], code: str
) -> None:
    with pytest.raises(kind) as raised, engine._translated():
        raise _refused(status)
    assert raised.value.code == code
    assert raised.value.status == status and raised.value.status_reason is None
