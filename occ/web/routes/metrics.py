"""``/metrics``: Prometheus exposition for scrapers holding a key with ``installation:read``."""

from __future__ import annotations

import flask

from occ.controller import installation
from occ.runtime import gauges
from occ.telemetry import metrics
from occ.web import access
from occ.web.routes import blueprints

blueprint = blueprints.Blueprint(
    __name__, url_prefix="", description="Prometheus metrics (authenticated)."
)


@blueprint.route("/metrics", methods=["GET"])
@blueprint.doc(
    responses={
        "200": {
            "description": "Prometheus text exposition",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    }
)
@access.requires("installation:read")
def get_metrics() -> flask.Response:
    """HTTP and queue metrics of this API process (all processes in multiprocess mode)."""
    runtime = flask.current_app.extensions["occ"].runtime
    database = runtime.database
    installation.get_installation(database, actor_id=access.principal_id())  # authorizes
    body, content_type = metrics.render(gauges.reader(database, runtime.settings.compute_driver))
    return flask.Response(body, content_type=content_type)
