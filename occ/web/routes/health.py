"""Liveness and readiness probes (no credentials)."""

from __future__ import annotations

from typing import Any

import flask
import marshmallow as ma
from marshmallow import fields

from occ.foundation import errors
from occ.web import access
from occ.web.routes import blueprints

blueprint = blueprints.Blueprint(
    __name__, url_prefix="", description="Probes for load balancers and orchestrators."
)


class Status(ma.Schema):
    status = fields.String(required=True)


@blueprint.route("/healthz", methods=["GET"])
@blueprint.response(200, Status)
@blueprint.doc(security=[])
@access.public
def healthz() -> dict[str, Any]:
    """Liveness: the process answers."""
    return {"status": "ok"}


@blueprint.route("/readyz", methods=["GET"])
@blueprint.response(200, Status)
@blueprint.doc(security=[])
@access.public
def readyz() -> dict[str, Any]:
    """Readiness: the database answers."""
    database = flask.current_app.extensions["occ"].runtime.database
    try:
        database.ping()
    except errors.DependencyUnavailable:
        raise errors.DependencyUnavailable("the database is unavailable") from None
    return {"status": "ready"}
