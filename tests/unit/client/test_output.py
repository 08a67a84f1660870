"""``occ.client.output``: tables, JSON and YAML of API data."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import yaml

from occ.client import output

ROWS = [
    {"id": "ns_1", "name": "team-a", "status": "ready", "labels": {"a": 1}},
    {"id": "ns_22", "name": "b", "status": None, "labels": {}},
]


def test_a_table_shows_the_columns_aligned_with_a_dash_for_none() -> None:
    assert output.render(ROWS, "table", ("id", "name", "status")).splitlines() == [
        "ID     NAME    STATUS",
        "ns_1   team-a  ready",
        "ns_22  b       -",
    ]


def test_an_object_is_one_field_per_line_with_nested_values_as_json() -> None:
    assert output.render(ROWS[0], "table").splitlines() == [
        "id      ns_1",
        "name    team-a",
        "status  ready",
        'labels  {"a":1}',
    ]


@pytest.mark.parametrize(("form", "parse"), [("json", json.loads), ("yaml", yaml.safe_load)])
def test_json_and_yaml_are_the_data_itself(form: str, parse: Callable[[str], object]) -> None:
    assert parse(output.render(ROWS, form)) == ROWS


def test_wide_adds_columns_and_name_prints_kind_slash_name() -> None:
    wide = output.render(ROWS, "wide", ("id", "name"), wide=("status",)).splitlines()
    assert wide[0].split() == ["ID", "NAME", "STATUS"]
    assert output.render(ROWS, "name", ("id",), kind="namespace").splitlines() == [
        "namespace/team-a",
        "namespace/b",
    ]
    # without a kind, an id's prefix names it; an item without a name shows its id
    assert output.render({"id": "agt_1", "name": "helper"}, "name") == "agent/helper"
    assert output.render([{"id": "cfg_9"}], "name") == "configuration/cfg_9"


def test_name_of_an_item_whose_id_names_no_kind_is_the_bare_id() -> None:
    work = {"id": "namespace:ns_1:reconcile:ready", "state": "queued"}
    assert output.render([work], "name") == "namespace:ns_1:reconcile:ready"
    assert output.render([work], "name", kind="work") == "work/namespace:ns_1:reconcile:ready"
