"""``deploy/prometheus/alerts.yml``: well-formed alerting rules over metrics occ exports."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from occ.state.db import Database
from tests.integration.deploy import metric_names

ALERTS = Path(__file__).resolve().parents[3] / "deploy" / "prometheus" / "alerts.yml"
EXPECTED = {"OccBacklogStuck", "OccClaimsLost", "OccPassFailureRatioHigh"}


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    assert isinstance(document, dict) and set(document) == {"groups"}
    rules: list[dict[str, Any]] = []
    for group in document["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["name"], group
        assert group["rules"], group["name"]
        rules.extend(group["rules"])
    return rules


def test_every_rule_is_a_complete_alert() -> None:
    rules = _rules()
    assert {rule["alert"] for rule in rules} == EXPECTED
    for rule in rules:
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", rule["alert"])
        assert isinstance(rule["expr"], str) and rule["expr"].strip()
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
        assert rule["labels"]["severity"] in ("info", "warning", "critical")
        assert {"summary", "description"} <= set(rule["annotations"])
        # a threshold makes it an alert rather than a recording of a value
        assert re.search(r"[<>]=?\s*\d", rule["expr"]), rule["alert"]


def test_rules_select_only_metrics_occ_exports(db: Database) -> None:
    exported = metric_names.exported(db)
    for rule in _rules():
        names = metric_names.referenced(rule["expr"])
        assert names, rule["alert"]
        assert names <= exported, (rule["alert"], names - exported)


def test_the_queue_gauges_are_not_summed_across_targets() -> None:
    # every target reads the same database: a sum would count the backlog once per target
    for rule in _rules():
        assert not re.search(r"sum[^()]*\(\s*occ_work_", rule["expr"]), rule["alert"]


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            'sum by (le) (rate(a_bucket{op="x}", le!="1"}[5m])) / on(job) group_left(v) b',
            {"a_bucket", "b"},
        ),
        ("max(c) > bool 0.5 offset 5m unless d[1h:1m]", {"c", "d"}),
        ('histogram_quantile(0.95, e{x=~"y|z"}[$__rate_interval]) and ${f}', {"e"}),
        ("count_values('v', g) or vector(1e3) * Inf", {"g"}),
    ],
)
def test_the_metric_name_reader(expr: str, names: set[str]) -> None:
    assert metric_names.referenced(expr) == names
