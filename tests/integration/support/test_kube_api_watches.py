"""Watches, paged and metadata-only lists of the fake Kubernetes API server, and its size,
driven over HTTP by the real ``kubernetes`` v37 client (its ``watch`` module included).

Each test states one apiserver behaviour the driver's observation cache relies on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client import exceptions

from tests.integration.support.conftest import Clients, api_client_for, present, raw, wire
from tests.support import kube_api

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_WATCH = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
READ_TIMEOUT = (5, 5)
"""Connect and read timeouts of a watch in these tests: a missing event fails, never hangs."""


def _config_map(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {"key": name}}


def _stream(clients: Clients, ns: str, **arguments: Any) -> Iterator[dict[str, Any]]:
    """The real client's watch of the ConfigMaps in ``ns``."""
    events: Iterator[dict[str, Any]] = watch.Watch().stream(
        clients.core.list_namespaced_config_map, ns, _request_timeout=READ_TIMEOUT, **arguments
    )
    return events


def _taken(events: Iterator[dict[str, Any]], count: int) -> list[tuple[str, str, int]]:
    """(type, name, resourceVersion) of the next ``count`` events."""
    taken = []
    for event in events:
        metadata = event["raw_object"]["metadata"]
        taken.append((event["type"], metadata.get("name"), int(metadata["resourceVersion"])))
        if len(taken) == count:
            break
    return taken


def _raw_watch(
    list_objects: Callable[..., object],
    ns: str,
    start: str | None,
    *,
    timeout_s: int,
    **arguments: Any,
) -> urllib3.BaseHTTPResponse:
    """The undecoded event stream of a watch in ``ns`` from version ``start``; ``list_objects``
    is the client's list call of the kind watched."""
    return raw(
        list_objects(
            ns,
            watch=True,
            resource_version=start,
            timeout_seconds=timeout_s,
            _preload_content=False,
            _request_timeout=READ_TIMEOUT,
            **arguments,
        )
    )


def _raw_lines(response: urllib3.BaseHTTPResponse) -> Iterator[dict[str, Any]]:
    for line in watch.watch.iter_resp_lines(response):
        if line:
            yield json.loads(line)


# -- watches ----------------------------------------------------------------------------


def test_a_watch_replays_every_change_after_its_version_in_order(clients: Clients, ns: str) -> None:
    clients.core.create_namespaced_config_map(ns, wire(_config_map("a")))
    start = present(clients.core.list_namespaced_config_map(ns).metadata).resource_version
    clients.core.patch_namespaced_config_map("a", ns, {"data": {"key": "changed"}})
    clients.core.create_namespaced_config_map(ns, wire(_config_map("b")))
    clients.core.delete_namespaced_config_map("a", ns)

    events = _taken(_stream(clients, ns, resource_version=start), 3)
    assert [(kind, name) for kind, name, _ in events] == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    versions = [version for _, _, version in events]
    assert int(present(start)) < versions[0] < versions[1] < versions[2]
    later = _taken(_stream(clients, ns, resource_version=str(versions[1])), 1)
    assert later == [events[2]]


def test_a_watch_without_a_version_opens_with_the_current_objects(
    clients: Clients, ns: str
) -> None:
    for name in ("a", "b"):
        clients.core.create_namespaced_config_map(ns, wire(_config_map(name)))
    events = _stream(clients, ns)
    opening = _taken(events, 2)
    assert [(kind, name) for kind, name, _ in opening] == [("ADDED", "a"), ("ADDED", "b")]
    clients.core.create_namespaced_config_map(ns, wire(_config_map("c")))
    assert [(kind, name) for kind, name, _ in _taken(events, 1)] == [("ADDED", "c")]


def test_label_changes_move_an_object_in_and_out_of_a_selected_watch(
    clients: Clients, ns: str
) -> None:
    start = present(clients.core.list_namespaced_config_map(ns).metadata).resource_version
    clients.core.create_namespaced_config_map(ns, wire(_config_map("x", {"tier": "other"})))
    clients.core.patch_namespaced_config_map("x", ns, {"metadata": {"labels": {"tier": "web"}}})
    clients.core.patch_namespaced_config_map("x", ns, {"data": {"key": "changed"}})
    clients.core.patch_namespaced_config_map("x", ns, {"metadata": {"labels": {"tier": "db"}}})
    clients.core.delete_namespaced_config_map("x", ns)  # not selected any more: no event
    clients.core.create_namespaced_config_map(ns, wire(_config_map("sentinel", {"tier": "web"})))

    events = _taken(_stream(clients, ns, resource_version=start, label_selector="tier=web"), 4)
    assert [(kind, name) for kind, name, _ in events] == [
        ("ADDED", "x"),
        ("MODIFIED", "x"),
        ("DELETED", "x"),
        ("ADDED", "sentinel"),
    ]


def test_a_compacted_version_is_answered_with_an_expired_status_event(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    start = present(clients.core.list_namespaced_config_map(ns).metadata).resource_version
    clients.core.create_namespaced_config_map(ns, wire(_config_map("a")))
    newest = fake.compact()

    answer = _raw_watch(clients.core.list_namespaced_config_map, ns, start, timeout_s=5)
    assert answer.status == 200  # the real watch cache answers 200, then the error event
    (error,) = list(_raw_lines(answer))
    assert error["type"] == "ERROR"
    assert error["object"]["kind"] == "Status"
    assert (error["object"]["code"], error["object"]["reason"]) == (410, "Expired")
    with pytest.raises(exceptions.ApiException) as expired:
        list(_stream(clients, ns, resource_version=start, timeout_seconds=5))
    assert expired.value.status == 410

    events = _stream(clients, ns, resource_version=str(newest))
    clients.core.create_namespaced_config_map(ns, wire(_config_map("b")))
    assert [(kind, name) for kind, name, _ in _taken(events, 1)] == [("ADDED", "b")]


def test_a_short_history_expires_versions_it_no_longer_keeps() -> None:
    with (
        kube_api.FakeKubeAPI(validate=False, history_limit=4) as fake,
        api_client_for(fake) as api_client,
    ):
        core = client.CoreV1Api(api_client)
        core.create_namespace(wire({"metadata": {"name": "n"}}))
        first = present(core.list_namespaced_config_map("n").metadata).resource_version
        for number in range(10):
            core.create_namespaced_config_map("n", wire(_config_map(f"c{number}")))
        with pytest.raises(exceptions.ApiException) as expired:
            list(
                watch.Watch().stream(
                    core.list_namespaced_config_map,
                    "n",
                    resource_version=first,
                    timeout_seconds=5,
                    _request_timeout=READ_TIMEOUT,
                )
            )
        assert expired.value.status == 410


def test_a_watch_ends_at_its_timeout_with_a_bookmark_of_the_newest_version(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    start = present(clients.core.list_namespaced_config_map(ns).metadata).resource_version
    clients.core.create_namespaced_secret(ns, wire({"metadata": {"name": "elsewhere"}}))
    events = list(
        _stream(clients, ns, resource_version=start, timeout_seconds=1, allow_watch_bookmarks=True)
    )
    assert [event["type"] for event in events] == ["BOOKMARK"]
    version = events[0]["raw_object"]["metadata"]["resourceVersion"]
    assert version == str(fake.resource_version) and int(present(version)) > int(present(start))
    assert list(_stream(clients, ns, resource_version=start, timeout_seconds=1)) == []


def test_bookmarks_come_periodically_when_the_server_sends_them(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    fake.bookmark_interval_s = 0.1
    start = present(clients.core.list_namespaced_config_map(ns).metadata).resource_version
    events = _stream(
        clients, ns, resource_version=start, timeout_seconds=60, allow_watch_bookmarks=True
    )
    assert [(kind, version) for kind, _, version in _taken(events, 2)] == [
        ("BOOKMARK", int(present(start))),
        ("BOOKMARK", int(present(start))),
    ]


def test_cut_watches_break_the_open_streams_and_the_server_keeps_answering(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    start = present(clients.core.list_namespaced_config_map(ns).metadata).resource_version
    stream = _raw_watch(clients.core.list_namespaced_config_map, ns, start, timeout_s=60)
    assert fake.cut_watches() == 1
    with pytest.raises(urllib3.exceptions.ProtocolError):
        list(_raw_lines(stream))
    assert clients.core.list_namespaced_config_map(ns).items == []
    assert [request.status for request in fake.journal[-2:]] == [200, 200]


# -- lists -------------------------------------------------------------------------------


def test_lists_come_in_pages_of_one_version_that_expire_with_compaction(
    clients: Clients, fake: kube_api.FakeKubeAPI, ns: str
) -> None:
    for number in range(5):
        clients.core.create_namespaced_config_map(ns, wire(_config_map(f"c{number}")))
    first = clients.core.list_config_map_for_all_namespaces(limit=2)
    names = [present(item.metadata).name for item in first.items]
    token = present(first.metadata)._continue
    while token:
        clients.core.create_namespaced_config_map(ns, wire(_config_map(f"late-{len(names)}")))
        page = clients.core.list_config_map_for_all_namespaces(limit=2, _continue=token)
        assert present(page.metadata).resource_version == present(first.metadata).resource_version
        names += [present(item.metadata).name for item in page.items]
        token = present(page.metadata)._continue
    assert names[:5] == [f"c{number}" for number in range(5)]
    assert len(names) == len(set(names))

    fake.compact()
    with pytest.raises(exceptions.ApiException) as expired:
        clients.core.list_config_map_for_all_namespaces(
            limit=2, _continue=present(first.metadata)._continue
        )
    assert (expired.value.status, json.loads(expired.value.body or "{}")["reason"]) == (
        410,
        "Expired",
    )


def test_metadata_only_lists_and_watches_carry_no_contents(clients: Clients, ns: str) -> None:
    start = present(clients.core.list_namespaced_secret(ns).metadata).resource_version
    clients.core.create_namespaced_secret(
        ns,
        wire(
            {"metadata": {"name": "token", "labels": {"a": "b"}}, "stringData": {"key": "s3cr3t"}}
        ),
    )
    listed = json.loads(
        raw(
            clients.core.list_namespaced_secret(
                ns, _preload_content=False, _headers={"Accept": f"{METADATA_LIST},application/json"}
            )
        ).data
    )
    assert listed["kind"] == "PartialObjectMetadataList"
    (item,) = listed["items"]
    assert item["kind"] == "PartialObjectMetadata" and set(item) == {
        "kind",
        "apiVersion",
        "metadata",
    }
    assert item["metadata"]["labels"] == {"a": "b"}

    watched = _raw_watch(
        clients.core.list_namespaced_secret,
        ns,
        start,
        timeout_s=5,
        _headers={"Accept": f"{METADATA_WATCH},application/json"},
    )
    event = next(_raw_lines(watched))
    watched.close()
    assert event["type"] == "ADDED"
    assert event["object"]["kind"] == "PartialObjectMetadata"
    assert "s3cr3t" not in json.dumps(event) and "data" not in event["object"]


def test_ten_thousand_objects_are_listed_by_namespace_selector_and_page(
    clients: Clients, fake: kube_api.FakeKubeAPI
) -> None:
    spaces = [f"space-{number:03}" for number in range(100)]
    for space in spaces:
        fake.seed("namespaces", {"metadata": {"name": space}})
        for number in range(100):
            fake.seed(
                "configmaps",
                {
                    "metadata": {
                        "name": f"c-{number:03}",
                        "namespace": space,
                        "labels": {"parity": str(number % 2)},
                    }
                },
            )

    def names(**arguments: Any) -> list[str]:
        answer = raw(
            clients.core.list_config_map_for_all_namespaces(_preload_content=False, **arguments)
        )
        document = json.loads(answer.data)
        found = [
            f"{item['metadata']['namespace']}/{item['metadata']['name']}"
            for item in document["items"]
        ]
        token = document["metadata"].get("continue")
        return found + (names(**{**arguments, "_continue": token}) if token else [])

    selected = json.loads(
        raw(
            clients.core.list_namespaced_config_map(
                "space-042", label_selector="parity=1", _preload_content=False
            )
        ).data
    )["items"]
    assert [item["metadata"]["name"] for item in selected] == [
        f"c-{number:03}" for number in range(1, 100, 2)
    ]
    every = names(limit=500)
    assert len(every) == 10_000 == len(set(every))
    assert every == sorted(every)
