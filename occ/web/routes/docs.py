"""``/v1/docs``: a self-contained page listing the OpenAPI document's operations (public).

The page ships in the package (``occ/web/static/docs.html``) and loads nothing from another
origin: it renders ``/v1/openapi.json`` in the browser. It must not embed the document.
"""

from __future__ import annotations

from importlib import resources

import flask

from occ.web import access
from occ.web.routes import blueprints

blueprint = blueprints.Blueprint(
    __name__, url_prefix="/v1", description="Human-readable API documentation."
)


@blueprint.route("/docs", methods=["GET"])
@blueprint.response(200, content_type="text/html", description="The documentation page.")
@access.public
def api_docs() -> flask.Response:
    """The API reference page, rendered from the OpenAPI document."""
    page = resources.files("occ.web").joinpath("static/docs.html").read_bytes()
    return flask.Response(page, mimetype="text/html")
