"""The blueprint base: flask-smorest with occ's strict argument parser (``json_input``)."""

from __future__ import annotations

import flask_smorest

from occ.web import json_input


class Blueprint(flask_smorest.Blueprint):  # type: ignore[misc]
    """A documented blueprint whose request bodies go through ``json_input``."""

    ARGUMENTS_PARSER = json_input.parser
