"""``/metrics`` over HTTP: authenticated, and it counts what the API answered."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.integration.web.conftest import Caller


def test_metrics_count_requests_and_read_the_queue(client: FlaskClient, admin: Caller) -> None:
    assert (
        client.post("/v1/namespaces", json={"name": "counted"}, headers=admin.headers).status_code
        == 201
    )
    response = client.get("/metrics", headers=admin.headers)
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert 'occ_http_requests_total{method="POST",route="/v1/namespaces",status="201"}' in text
    assert "occ_work_pending 1.0" in text
    assert 'occ_agents{lifecycle_state="active"} 0.0' in text


def test_metrics_need_a_key(client: FlaskClient) -> None:
    assert client.get("/metrics").status_code == 401
