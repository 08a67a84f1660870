"""``/v1/namespaces/<namespace_id>/agents/<agent_id>/logs``: an Agent's runtime logs, streamed.

The answer is ``text/plain``, one redacted line per line, streamed as the Compute Driver reads
them; a follow ends after the use case's bound or when the client goes away (the reader is
closed either way), and one principal holds at most ``log_follows.MAX_PER_PRINCIPAL`` follows
at once in a process. Errors before the first line are problem+json like any other.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import flask

from occ.controller import agent_logs
from occ.drivers import compute
from occ.web import access, calls, log_follows
from occ.web.routes import blueprints
from occ.web.schemas import logs as schemas

blueprint = blueprints.Blueprint(
    __name__,
    url_prefix="/v1/namespaces/<namespace_id>/agents",
    description="An Agent's runtime logs.",
)


@blueprint.route("/<agent_id>/logs", methods=["GET"])
@blueprint.arguments(schemas.LogsQuery, location="query", unknown="raise")
@blueprint.doc(
    responses={
        "200": {
            "description": "The runtime's log lines, redacted, as the driver reads them",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        "409": "CONFLICT",
        "503": "SERVICE_UNAVAILABLE",
    },
)
@access.requires("agent:read_logs")
def read_agent_logs(query: dict[str, Any], namespace_id: str, agent_id: str) -> flask.Response:
    """Stream the Agent's runtime (gateway) log: the last ``tail`` lines, since ``since``, then
    new ones while ``follow`` (secret values redacted; one audit event per read)."""
    context = calls.context()
    settings = context.runtime.settings
    command = agent_logs.ReadLogs(
        namespace_id=namespace_id,
        agent_id=agent_id,
        tail=query["tail"],
        since=None if query.get("since") is None else schemas.moment(query["since"]),
        follow=query["follow"],
    )
    principal_id = access.principal_id()
    if command.follow:
        log_follows.enter(principal_id)  # before anything is opened: a refusal holds nothing
    try:
        lines = calls.call(
            agent_logs.open_logs,
            command,
            reader=compute.logs(settings.compute_driver, settings),
            secret_driver=context.secrets,
            fingerprint_key=settings.credential_fingerprint_key,
        )
    except BaseException:
        if command.follow:
            log_follows.leave(principal_id)
        raise

    def body() -> Iterator[bytes]:
        for line in lines:
            yield line.encode() + b"\n"

    def ended() -> None:  # the WSGI server's close(): also when the body never started
        lines.close()
        if command.follow:
            log_follows.leave(principal_id)

    response = flask.Response(body(), content_type="text/plain; charset=utf-8")
    response.call_on_close(ended)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"  # a proxy must pass a follow line by line
    return response
