"""Answers of Flask's test client, read as the JSON documents the API promises."""

from __future__ import annotations

from typing import Any

from werkzeug.wrappers import Response


def json_of(response: Response) -> Any:
    """The JSON document of ``response``; the test fails when the answer carries none.

    werkzeug types ``Response.json`` as optional (None for a body that is not JSON); every
    answer a test reads this way is JSON, so this says so once instead of at each read.
    """
    document = response.json
    assert document is not None, response.get_data(as_text=True)
    return document
