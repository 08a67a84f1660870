"""``deploy/grafana/occ.json``: a Grafana dashboard whose panels query metrics occ exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from occ.state.db import Database
from tests.integration.deploy import metric_names

DASHBOARD = Path(__file__).resolve().parents[3] / "deploy" / "grafana" / "occ.json"


def _dashboard() -> dict[str, Any]:
    document = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _panels() -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = []
    for panel in _dashboard()["panels"]:
        panels.append(panel)
        panels.extend(panel.get("panels", []))  # rows keep their panels inside
    return panels


def test_the_dashboard_is_a_titled_json_model_with_a_datasource_variable() -> None:
    document = _dashboard()
    assert document["title"] and document["uid"] and isinstance(document["schemaVersion"], int)
    variables = document["templating"]["list"]
    assert [(v["name"], v["type"], v["query"]) for v in variables] == [
        ("datasource", "datasource", "prometheus")
    ]
    ids = [panel["id"] for panel in _panels()]
    assert len(ids) == len(set(ids))


def test_every_panel_has_a_title_a_place_and_prometheus_targets() -> None:
    for panel in _panels():
        assert panel["title"].strip(), panel
        assert {"x", "y", "w", "h"} <= set(panel["gridPos"]), panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]


def test_the_panels_the_operators_need_are_there() -> None:
    exprs = {panel["title"]: " ".join(t["expr"] for t in panel["targets"]) for panel in _panels()}
    assert "occ_work_pending" in exprs["Work backlog"]
    assert "occ_work_oldest_pending_age_seconds" in exprs["Oldest pending age"]
    assert "by (work_kind, outcome)" in exprs["Pass outcomes"]
    assert "occ_claims_lost_total" in exprs["Claims lost"]
    deploy = exprs["Deploy duration"]
    assert "histogram_quantile(0.5," in deploy and "histogram_quantile(0.95," in deploy
    assert 'occ_agent_operation_duration_seconds_bucket{operation="deploy"}' in deploy


def test_every_target_selects_only_metrics_occ_exports(db: Database) -> None:
    exported = metric_names.exported(db)
    for panel in _panels():
        for target in panel["targets"]:
            names = metric_names.referenced(target["expr"])
            assert names, (panel["title"], target["expr"])
            assert names <= exported, (panel["title"], names - exported)
