"""What every problem answer carries beyond its body: ``Retry-After`` on a 503."""

from __future__ import annotations

import uuid

from flask.testing import FlaskClient

from occ.settings.config import Settings
from occ.web import problems
from occ.web.app import create_app
from tests.support.responses import json_of


def test_an_unavailable_database_answers_503_with_retry_after(settings: Settings) -> None:
    unreachable = settings.replace(database_url="postgresql+psycopg://occ:occ@127.0.0.1:1/occ")
    app = create_app(unreachable)
    try:
        key = f"occ_key_{uuid.uuid4()}_{'ab' * 32}"  # well formed: checking it needs the database
        answered = app.test_client().get(
            "/v1/namespaces", headers={"Authorization": f"Bearer {key}"}
        )
    finally:
        app.extensions["occ"].runtime.database.dispose()
    assert answered.status_code == 503, answered.json
    assert answered.content_type == "application/problem+json"
    assert json_of(answered)["code"] == "DEPENDENCY_UNAVAILABLE"
    assert answered.headers["Retry-After"] == str(problems.RETRY_AFTER_S)


def test_other_problems_carry_no_retry_after(client: FlaskClient) -> None:
    answered = client.get("/v1/namespaces")
    assert answered.status_code == 401 and "Retry-After" not in answered.headers
