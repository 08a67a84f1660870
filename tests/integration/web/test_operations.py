"""The operator views over HTTP: the work list and its items (``GET /v1/work``), and
``GET /v1/audit-events``.

Representations, filters, cursors, 400 pointers, 401, and what a principal without the
permission sees (403 on the lists, 404 on a work item it may not even read), audited.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from occ.foundation import ids
from occ.state import models, values, work_claims, work_queue
from occ.state.db import Database
from tests.integration.web.conftest import Caller
from tests.integration.web.support import caller, problem, revoke, walk
from tests.support import rows
from tests.support.responses import json_of

WORK = "/v1/work"

WORK_FIELDS = {
    "id",
    "kind",
    "namespaceId",
    "agentId",
    "revisionId",
    "actorId",
    "namespaceTarget",
    "agentTarget",
    "state",
    "attemptCount",
    "availableAt",
    "leaseExpiresAt",
    "completedAt",
    "reasonCode",
    "resultData",
    "lastProgressCode",
    "lastProgressAt",
    "createdAt",
    "updatedAt",
}
EVENT_FIELDS = {
    "id",
    "sequence",
    "occurredAt",
    "kind",
    "action",
    "actorId",
    "namespaceId",
    "resourceKind",
    "resourceId",
    "workId",
    "outcome",
    "details",
}


def create_namespace(client: FlaskClient, admin: Caller, name: str) -> str:
    response = client.post("/v1/namespaces", json={"name": name}, headers=admin.headers)
    assert response.status_code == 201, response.json
    return str(json_of(response)["data"]["id"])


def work_rows(db: Database) -> int:
    with db.transaction() as session:
        return int(
            session.scalar(sa.select(sa.func.count()).select_from(models.ControllerWork)) or 0
        )


def get(client: FlaskClient, path: str, who: Caller, **query: Any) -> Any:
    return client.get(path, query_string=query, headers=who.headers)


def pointers(response: Any) -> list[str]:
    return [error["pointer"] for error in json_of(response)["errors"]]


# -- work: success paths ------------------------------------------------------------------------


def test_work_list_represents_items_in_camel_case_without_tokens(
    client: FlaskClient, admin: Caller, db: Database, policy: values.QueuePolicy
) -> None:
    namespace_id = create_namespace(client, admin, "team-a")
    with db.transaction() as session:
        (dispatch,) = work_claims.claim(session, policy, limit=1)
    response = get(client, "/v1/work", admin)
    assert response.status_code == 200, response.json
    assert json_of(response)["meta"] == {
        "requestId": response.headers["X-Request-Id"],
        "nextCursor": None,
    }
    (item,) = json_of(response)["data"]
    assert set(item) == WORK_FIELDS
    assert item["id"] == f"namespace:{namespace_id}:reconcile:ready"
    assert (item["kind"], item["namespaceId"], item["actorId"], item["namespaceTarget"]) == (
        "namespace_ready",
        namespace_id,
        admin.principal_id,
        "ready",
    )
    assert (item["state"], item["attemptCount"]) == ("claimed", 1)
    assert item["leaseExpiresAt"] is not None and item["completedAt"] is None
    assert item["agentId"] is None and item["resultData"] is None
    assert str(dispatch.token) not in response.get_data(as_text=True)
    assert "token" not in response.get_data(as_text=True).lower()


def test_work_item_by_id_with_colons(
    client: FlaskClient, admin: Caller, db: Database, policy: values.QueuePolicy
) -> None:
    namespace_id = create_namespace(client, admin, "team-a")
    work_id = f"namespace:{namespace_id}:reconcile:ready"
    with db.transaction() as session:
        (dispatch,) = work_claims.claim(session, policy, limit=1)
    with db.transaction() as session:
        run = work_queue.start(session, policy, dispatch)
        assert run is not None
        work_queue.fail(
            session, run, code="CONVERGENCE_DEADLINE_EXCEEDED", result_data={"timeoutMs": 900_000}
        )
    for path in (f"{WORK}/{work_id}", f"{WORK}/{quote(work_id, safe='')}"):
        response = get(client, path, admin)
        assert response.status_code == 200, response.json
        item = json_of(response)["data"]
        assert set(item) == WORK_FIELDS
        assert item["id"] == work_id
        assert (item["state"], item["reasonCode"], item["resultData"]) == (
            "failed_permanent",
            "CONVERGENCE_DEADLINE_EXCEEDED",
            {"timeoutMs": 900_000},
        )
        assert item["completedAt"] is not None and item["leaseExpiresAt"] is None
        assert json_of(response)["meta"]["requestId"] == response.headers["X-Request-Id"]


def test_work_item_that_does_not_exist(client: FlaskClient, admin: Caller) -> None:
    missing = f"namespace:{ids.new('namespace')}:reconcile:ready"
    problem(get(client, f"{WORK}/{missing}", admin), 404, "NOT_FOUND")
    problem(get(client, WORK + "/not a work id", admin), 404, "NOT_FOUND")
    problem(get(client, WORK + "/" + "a" * 300, admin), 404, "NOT_FOUND")


def test_work_filters(
    client: FlaskClient, admin: Caller, db: Database, policy: values.QueuePolicy
) -> None:
    first = create_namespace(client, admin, "team-a")
    second = create_namespace(client, admin, "team-b")
    with db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=second)
        revision_id = rows.revision(
            session, namespace_id=second, agent_id=agent_id, actor_id=admin.principal_id, number=1
        )
        work_queue.enqueue(
            session, *rows.revision_work(second, agent_id, revision_id, admin.principal_id)
        )
    with db.transaction() as session:
        claimed = work_claims.claim(session, policy, limit=2)
    assert len(claimed) == 2  # the two oldest lane heads: the Namespaces' ready work
    claimed_ids = {c.work_id for c in claimed}

    def listed(**query: Any) -> set[str]:
        response = get(client, "/v1/work", admin, **query)
        assert response.status_code == 200, response.json
        return {item["id"] for item in json_of(response)["data"]}

    everything = listed()
    assert len(everything) == 3
    by_id = {item["id"]: item for item in json_of(get(client, "/v1/work", admin))["data"]}
    assert {
        work_id: (item["kind"], item["namespaceTarget"], item["agentTarget"])
        for work_id, item in by_id.items()
    } == {
        f"namespace:{first}:reconcile:ready": ("namespace_ready", "ready", None),
        f"namespace:{second}:reconcile:ready": ("namespace_ready", "ready", None),
        f"agent_revision:{revision_id}:reconcile": ("revision_reconcile", None, None),
    }
    assert by_id[f"agent_revision:{revision_id}:reconcile"]["revisionId"] == revision_id
    assert listed(namespaceId=first) == {f"namespace:{first}:reconcile:ready"}
    assert listed(namespaceId=second) == {
        f"namespace:{second}:reconcile:ready",
        f"agent_revision:{revision_id}:reconcile",
    }
    assert listed(agentId=agent_id) == {f"agent_revision:{revision_id}:reconcile"}
    assert listed(state="claimed") == claimed_ids
    assert listed(state="queued") == everything - claimed_ids
    assert listed(state="succeeded") == set()
    assert listed(state="claimed", namespaceId=first) == claimed_ids & {
        f"namespace:{first}:reconcile:ready"
    }
    assert listed(namespaceId=ids.new("namespace")) == set()


def test_work_pages_newest_first(client: FlaskClient, admin: Caller) -> None:
    created = [create_namespace(client, admin, f"team-{n}") for n in range(5)]
    expected = [f"namespace:{n}:reconcile:ready" for n in reversed(created)]
    pages = walk(client, "/v1/work", admin, 2)
    assert [work_id for page in pages for work_id in page] == expected
    assert len(pages) == 3


def test_a_work_cursor_is_refused_under_other_filters(client: FlaskClient, admin: Caller) -> None:
    for n in range(3):
        create_namespace(client, admin, f"team-{n}")
    cursor = json_of(get(client, "/v1/work", admin, limit=1))["meta"]["nextCursor"]
    assert cursor is not None
    refused = get(client, "/v1/work", admin, limit=1, cursor=cursor, state="queued")
    problem(refused, 400, "INVALID_REQUEST")
    assert pointers(refused) == ["/query/cursor"]
    following = get(client, "/v1/work", admin, limit=2, cursor=cursor)  # the size may change
    assert len(json_of(following)["data"]) == 2


# -- work: bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "pointer"),
    [
        ({"state": "done"}, "/query/state"),
        ({"namespaceId": "ns_nope"}, "/query/namespaceId"),
        ({"namespaceId": ids.new("agent")}, "/query/namespaceId"),
        ({"agentId": "agt_1"}, "/query/agentId"),
        ({"limit": "0"}, "/query/limit"),
        ({"limit": "501"}, "/query/limit"),
        ({"limit": "ten"}, "/query/limit"),
        ({"limit": "1.5"}, "/query/limit"),
        ({"cursor": "not-a-cursor"}, "/query/cursor"),
        ({"cursor": "W10"}, "/query/cursor"),  # base64url of "[]"
        ({"cursor": "x" * 600}, "/query/cursor"),
        ({"colour": "red"}, "/query/colour"),  # unknown: refused before the schema
    ],
)
def test_work_list_rejects_bad_query(
    client: FlaskClient, admin: Caller, db: Database, query: dict[str, str], pointer: str
) -> None:
    create_namespace(client, admin, "team-a")
    before = work_rows(db)
    response = get(client, "/v1/work", admin, **query)
    problem(response, 400, "INVALID_REQUEST")
    assert pointer in pointers(response)
    assert work_rows(db) == before


# -- audit events -------------------------------------------------------------------------------


def test_audit_events_represent_and_filter(client: FlaskClient, admin: Caller) -> None:
    first = create_namespace(client, admin, "team-a")
    second = create_namespace(client, admin, "team-b")
    response = get(client, "/v1/audit-events", admin)
    assert response.status_code == 200, response.json
    assert json_of(response)["meta"] == {
        "requestId": response.headers["X-Request-Id"],
        "nextBefore": None,
    }
    events = json_of(response)["data"]
    assert all(set(event) == EVENT_FIELDS for event in events)
    sequences = [event["sequence"] for event in events]
    assert sequences == sorted(sequences, reverse=True)
    assert [e["action"] for e in events][-1] == "installation.bootstrap"

    (created,) = json_of(get(client, "/v1/audit-events", admin, namespaceId=first))["data"]
    work_id = f"namespace:{first}:reconcile:ready"
    assert (created["kind"], created["action"], created["outcome"], created["actorId"]) == (
        "mutation",
        "namespaces.create",
        "success",
        admin.principal_id,
    )
    assert (
        created["namespaceId"],
        created["resourceKind"],
        created["resourceId"],
        created["workId"],
    ) == (first, "namespace", first, work_id)
    assert created["details"]["name"] == "team-a"
    assert ids.is_valid("audit_event", created["id"])

    by_resource = json_of(get(client, "/v1/audit-events", admin, resourceId=second))["data"]
    assert [e["resourceId"] for e in by_resource] == [second]
    by_work = json_of(get(client, "/v1/audit-events", admin, workId=work_id))["data"]
    assert [e["id"] for e in by_work] == [created["id"]]
    by_kind = json_of(get(client, "/v1/audit-events", admin, kind="bootstrap"))["data"]
    assert [e["action"] for e in by_kind] == ["installation.bootstrap"]
    assert (
        json_of(
            get(client, "/v1/audit-events", admin, namespaceId=first, kind="authorization_denial")
        )["data"]
        == []
    )


def test_audit_events_page_backwards_by_sequence(client: FlaskClient, admin: Caller) -> None:
    for n in range(4):
        create_namespace(client, admin, f"team-{n}")
    everything = [e["sequence"] for e in json_of(get(client, "/v1/audit-events", admin))["data"]]
    assert len(everything) == 5  # bootstrap + four creations
    pages = walk(client, "/v1/audit-events", admin, 2, "sequence", follow=("before", "nextBefore"))
    assert [sequence for page in pages for sequence in page] == everything
    oldest_two = json_of(get(client, "/v1/audit-events", admin, before=everything[2]))["data"]
    assert [e["sequence"] for e in oldest_two] == everything[3:]


@pytest.mark.parametrize(
    ("query", "pointer"),
    [
        ({"namespaceId": "team-a"}, "/query/namespaceId"),
        ({"resourceId": "something"}, "/query/resourceId"),
        ({"resourceId": "ns_" + "0" * 36}, "/query/resourceId"),
        ({"workId": "no spaces allowed"}, "/query/workId"),
        ({"workId": "namespace:" + "x" * 250}, "/query/workId"),
        ({"workId": "namespace:ns_nope:reconcile:ready"}, "/query/workId"),
        ({"workId": f"agent:{ids.new('namespace')}:reconcile:deleted"}, "/query/workId"),
        ({"kind": "everything"}, "/query/kind"),
        ({"before": "0"}, "/query/before"),
        ({"before": "-3"}, "/query/before"),
        ({"before": str(2**63)}, "/query/before"),
        ({"before": "soon"}, "/query/before"),
        ({"limit": "0"}, "/query/limit"),
        ({"sort": "asc"}, "/query/sort"),  # unknown: refused before the schema
    ],
)
def test_audit_events_reject_bad_query(
    client: FlaskClient, admin: Caller, query: dict[str, str], pointer: str
) -> None:
    response = get(client, "/v1/audit-events", admin, **query)
    problem(response, 400, "INVALID_REQUEST")
    assert pointer in pointers(response)


# -- authentication and authorization -----------------------------------------------------------

ROUTES = ("/v1/work", "/v1/audit-events")


def test_without_or_with_a_revoked_key(client: FlaskClient, admin: Caller, db: Database) -> None:
    namespace_id = create_namespace(client, admin, "team-a")
    item = f"{WORK}/namespace:{namespace_id}:reconcile:ready"
    operator = caller(db, "installation:read", "installation:administer", name="operator")
    for path in (*ROUTES, item):
        assert get(client, path, operator).status_code == 200
        problem(client.get(path), 401, "UNAUTHENTICATED")
        problem(
            client.get(path, headers={"Authorization": "Bearer occ_nonsense"}),
            401,
            "UNAUTHENTICATED",
        )
    revoke(db, operator)
    for path in (*ROUTES, item):
        response = get(client, path, operator)
        problem(response, 401, "UNAUTHENTICATED")
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_namespace_reader_sees_nothing_and_is_audited(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    namespace_id = create_namespace(client, admin, "team-a")
    reader = caller(db, "namespace:read", namespace_id=namespace_id, name="operator")
    assert get(client, f"/v1/namespaces/{namespace_id}", reader).status_code == 200
    before = work_rows(db)
    work_id = f"namespace:{namespace_id}:reconcile:ready"

    problem(get(client, "/v1/work", reader), 403, "FORBIDDEN")
    problem(get(client, "/v1/work", reader, namespaceId=namespace_id), 403, "FORBIDDEN")
    hidden = problem(get(client, f"{WORK}/{work_id}", reader), 404, "NOT_FOUND")
    missing = problem(
        get(client, f"{WORK}/namespace:{ids.new('namespace')}:reconcile:ready", reader),
        404,
        "NOT_FOUND",
    )
    assert hidden["detail"] == missing["detail"]  # existence is not revealed
    problem(get(client, "/v1/audit-events", reader), 403, "FORBIDDEN")
    problem(get(client, "/v1/audit-events", reader, namespaceId=namespace_id), 403, "FORBIDDEN")
    assert work_rows(db) == before

    denials = json_of(get(client, "/v1/audit-events", admin, kind="authorization_denial"))["data"]
    assert all(d["actorId"] == reader.principal_id and d["outcome"] == "denied" for d in denials)
    # the two 404s are counted in one event of their minute (two if they straddled one)
    counted = [d for d in denials if "hiddenDenials" in d["details"]]
    assert {d["action"] for d in counted} == {"work.read"}
    assert sum(d["details"]["hiddenDenials"] for d in counted) == 2
    denials = [d for d in denials if d not in counted]
    assert sorted(d["action"] for d in denials) == sorted(
        ["work.list", "work.list", "audit_events.list", "audit_events.list"]
    )
    assert {d["details"]["permission"] for d in denials} == {
        "installation:administer",
        "installation:read",
    }
    assert all(d["resourceKind"] == "installation" for d in denials)


def test_an_installation_reader_reads_audit_events_but_not_work(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    namespace_id = create_namespace(client, admin, "team-a")
    auditor = caller(db, "installation:read", name="operator")
    assert get(client, "/v1/audit-events", auditor).status_code == 200
    problem(get(client, "/v1/work", auditor), 403, "FORBIDDEN")
    # it may read the Installation, so the work item is forbidden rather than hidden; the
    # answer is the same whether the item exists or not
    problem(
        get(client, f"{WORK}/namespace:{namespace_id}:reconcile:ready", auditor), 403, "FORBIDDEN"
    )
    problem(
        get(client, f"{WORK}/namespace:{ids.new('namespace')}:reconcile:ready", auditor),
        403,
        "FORBIDDEN",
    )


def test_a_namespace_scoped_administrator_role_grants_nothing_here(
    client: FlaskClient, admin: Caller, db: Database
) -> None:
    namespace_id = create_namespace(client, admin, "team-a")
    # installation permissions bound at a Namespace scope do not reach the Installation
    scoped = caller(
        db,
        "installation:read",
        "installation:administer",
        namespace_id=namespace_id,
        name="operator",
    )
    problem(get(client, "/v1/work", scoped), 403, "FORBIDDEN")
    problem(get(client, "/v1/audit-events", scoped), 403, "FORBIDDEN")
