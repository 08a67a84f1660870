"""A body error on a Namespace the caller may not see answers 404, as a valid body would.

Installed by the app as ``json_input``'s body-error check: the path's resources are
authorized before the body is judged, so a bad body reveals nothing about a hidden
Namespace. It asks only when a body is refused (valid bodies are authorized by their use
case), and it must not write.
"""

from __future__ import annotations

import flask

from occ.controller import visibility
from occ.foundation import errors
from occ.web import access


def refuse_unseen(request: flask.Request) -> None:
    """``NotFound`` when the caller may not see the path's Namespace."""
    namespace_id = (request.view_args or {}).get("namespace_id")
    principal_id = flask.g.get("principal_id")
    if namespace_id is None or principal_id is None:
        return
    view = flask.current_app.view_functions.get(request.endpoint or "")
    permissions = access.declared(view) if view is not None else None
    database = flask.current_app.extensions["occ"].runtime.database
    if not visibility.namespace_visible(
        database,
        actor_id=principal_id,
        namespace_id=str(namespace_id),
        permissions=permissions or (),
    ):
        raise errors.NotFound("the namespace does not exist")
