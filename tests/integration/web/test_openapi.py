"""The OpenAPI document: public, valid OpenAPI 3.0, complete for the URL map under ``/v1``, and
true to the API (a short schemathesis run finds no 5xx and no response outside the schema).
"""

from __future__ import annotations

import json
import re
from typing import Any

import flask
import hypothesis
import jsonschema_rs
import pytest
import schemathesis
from flask.testing import FlaskClient
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import response_schema_conformance
from schemathesis.specs.openapi.definitions import OPENAPI_30

from occ.web import serving
from occ.web.routes import blueprints
from occ.web.schemas import common
from tests.integration.web.conftest import Caller
from tests.support.responses import json_of

try:
    from openapi_spec_validator import validate as validate_spec
except ImportError:  # not installed here: the same OAS 3.0 JSON Schema, through jsonschema-rs
    validate_spec = None

DOCUMENT = "/v1/openapi.json"
DOCS_ENDPOINT_PREFIX = "api-docs."
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
UNDOCUMENTED_METHODS = {"HEAD", "OPTIONS"}  # Flask adds them to every rule
WORK = "/v1/work"
FUZZED_PATHS = r"^/v1/(?!openapi\.json)"
_CONVERTER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


def openapi_path(rule: str) -> str:
    """A Flask rule's converters as OpenAPI path templates (``<path:x>`` -> ``{x}``)."""
    return _CONVERTER.sub(r"{\1}", rule)


def meta_schema_errors(document: dict[str, Any]) -> list[str]:
    """Violations of the official OpenAPI 3.0 JSON Schema.

    ``openapi-spec-validator`` when installed; otherwise the same OAS 3.0 schema
    (spec.openapis.org/oas/3.0/schema/2019-04-02) as bundled with schemathesis, checked with
    jsonschema-rs.
    """
    if validate_spec is None:
        validator = jsonschema_rs.Draft4Validator(OPENAPI_30)
        return [
            f"{list(error.instance_path)}: {error.message}"
            for error in validator.iter_errors(document)
        ]
    try:
        validate_spec(document)
    except Exception as exc:
        return [str(exc)]
    return []


def references(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [ref for item in value.values() for ref in references(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in references(item)]
    return []


def resolve(document: dict[str, Any], reference: str) -> Any:
    assert reference.startswith("#/"), reference
    node: Any = document
    for token in reference[2:].split("/"):
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return node


@pytest.fixture
def document(client: FlaskClient) -> dict[str, Any]:
    response = client.get(DOCUMENT)
    assert response.status_code == 200, response.get_data(as_text=True)
    return dict(json_of(response))


def test_the_document_is_public_json(client: FlaskClient) -> None:
    response = client.get(DOCUMENT)  # no Authorization header
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.headers["X-Request-Id"]


def test_the_document_is_valid_openapi_3(document: dict[str, Any]) -> None:
    assert meta_schema_errors(document) == []
    assert meta_schema_errors({**document, "info": {"title": "occ"}})  # the validator bites
    assert document["openapi"].startswith("3.0.")
    assert document["info"]["title"] and document["info"]["version"]
    assert document["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
    }
    assert document["security"] == [{"bearer": []}, {"session": []}]
    for reference in references(document):
        assert resolve(document, reference) is not None, reference
    for path, item in document["paths"].items():
        assert path.startswith("/"), path
        shared = item.get("parameters", [])
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            assert operation["responses"], (method, path)
            if path.startswith("/v1/"):
                assert any(code.startswith("2") for code in operation["responses"]), (method, path)
            declared = {
                p["name"]
                for p in [*shared, *operation.get("parameters", [])]
                if p.get("in") == "path"
            }
            assert declared == set(re.findall(r"{([^}]+)}", path)), (method, path)


def test_the_document_lists_every_route_with_its_methods(
    app: flask.Flask, document: dict[str, Any]
) -> None:
    expected: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/v1/") or rule.endpoint.startswith(DOCS_ENDPOINT_PREFIX):
            continue
        methods = {m.lower() for m in (rule.methods or set()) - UNDOCUMENTED_METHODS}
        expected.setdefault(openapi_path(rule.rule), set()).update(methods)
    documented = {
        path: {method for method in item if method in HTTP_METHODS}
        for path, item in document["paths"].items()
        if path.startswith("/v1/")
    }
    assert documented == expected
    for path in (
        WORK,
        WORK + "/{work_id}",
        "/v1/audit-events",
        "/v1/namespaces",
        "/v1/installation",
    ):
        assert "get" in documented[path], path


def test_error_responses_are_documented_as_problem_details(document: dict[str, Any]) -> None:
    for name in ("DEFAULT_ERROR", "BAD_REQUEST"):
        response = document["components"]["responses"][name]
        assert list(response["content"]) == ["application/problem+json"], name
        schema = resolve(
            document, response["content"]["application/problem+json"]["schema"]["$ref"]
        )
        assert schema["properties"]["code"]["type"] == "string", name
        assert schema["properties"]["status"]["type"] == "integer", name


def test_operator_views_document_their_query_parameters(document: dict[str, Any]) -> None:
    def query(path: str) -> set[str]:
        return {
            p["name"] for p in document["paths"][path]["get"]["parameters"] if p["in"] == "query"
        }

    assert query("/v1/work") == {"state", "namespaceId", "agentId", "limit", "cursor"}
    assert query("/v1/audit-events") == {
        "namespaceId",
        "resourceId",
        "workId",
        "kind",
        "before",
        "limit",
    }
    work_item = document["components"]["schemas"]["WorkItem"]["properties"]
    assert not any("token" in name.lower() for name in work_item)


# -- schemathesis ------------------------------------------------------------------------------
#
# Driven through the Python API rather than schemathesis' pytest plugin: the plugin's
# ``from_fixture(...).parametrize()`` fails on pytest 9 ('Function' object has no attribute
# '_nodeid'). Every operation gets positive and negative cases.

EXAMPLES_PER_MODE = 6


def problem_details(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every error answer is problem+json with the stable fields (the document's generic error
    schema is not what schemathesis validates these bodies against)."""
    if response.status_code < 400:
        return None
    assert response.headers["content-type"] == ["application/problem+json"], response.headers
    body = response.json()
    assert common.Problem().validate(body) == {}, body
    assert body["status"] == response.status_code and body["code"].isupper(), body
    assert body["requestId"] == response.headers["x-request-id"][0], body
    return True


CHECKS = [not_a_server_error, response_schema_conformance, problem_details]


def test_the_api_keeps_to_its_document(app: flask.Flask, admin: Caller) -> None:
    schema = schemathesis.openapi.from_wsgi(DOCUMENT, app).include(path_regex=FUZZED_PATHS)
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result
        operation = result.ok()
        operations += 1
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):

            @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
            @hypothesis.settings(
                max_examples=EXAMPLES_PER_MODE,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(hypothesis.HealthCheck),
                phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
            )
            def run(case: Any) -> None:
                case.call_and_validate(headers=admin.headers, checks=CHECKS)

            try:
                run()
            except Exception as exc:  # one operation's failure must not hide the others'
                failures.append(f"{operation.label} [{mode.value}]: {exc}")
    assert operations >= 45  # every /v1 operation of the document
    assert not failures, "\n\n".join(failures)
    # whatever the run changed, it never locked the administrator out
    after = app.test_client().get("/v1/roles", headers=admin.headers)
    assert after.status_code == 200, after.json


# -- the conventions in the document -----------------------------------------------------------


def operations_of(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]


def test_every_operation_has_an_id_a_summary_and_its_client_errors(
    document: dict[str, Any],
) -> None:
    found = operations_of(document)
    identifiers = [operation["operationId"] for _, _, operation in found]
    assert len(identifiers) == len(set(identifiers)) == len(found)
    assert "deployAgent" in identifiers and "listNamespaces" in identifiers
    public = {"/healthz", "/readyz", "/v1/docs"}
    for path, method, operation in found:
        assert operation["summary"].strip(), (method, path)
        responses = operation["responses"]
        assert "400" in responses, (method, path)  # any unknown query parameter
        if path not in public:
            assert {"401", "403", "404"} <= set(responses), (method, path)
        if method == "post" and path not in public:
            assert "409" in responses, (method, path)
            assert "Idempotency-Key" in {p["name"] for p in operation.get("parameters", [])}
        if method in ("patch", "delete"):
            assert {"409", "412"} <= set(responses), (method, path)
            assert "If-Match" in {p["name"] for p in operation.get("parameters", [])}
        if "requestBody" in operation:
            assert {"413", "415"} <= set(responses), (method, path)
        for status in ("201", "202"):
            if status in responses:
                assert "Location" in responses[status]["headers"], (method, path)
    agent = document["paths"]["/v1/namespaces/{namespace_id}/agents/{agent_id}"]["get"]
    assert "ETag" in agent["responses"]["200"]["headers"]


def test_problem_codes_and_statuses_are_enumerated(document: dict[str, Any]) -> None:
    problem = document["components"]["schemas"]["Problem"]["properties"]
    codes, statuses = set(problem["code"]["enum"]), set(problem["status"]["enum"])
    assert {"PRECONDITION_FAILED", "IDEMPOTENCY_KEY_REUSED", "MALFORMED_REQUEST"} <= codes
    refusals = [refusal for _, refusal in serving.REFUSALS]
    assert refusals
    assert {refusal.code for refusal in refusals} <= codes
    assert {refusal.status for refusal in refusals} <= statuses
    assert {400, 404, 409, 412, 503} <= statuses


def test_the_docs_page_is_served_from_the_package(client: FlaskClient) -> None:
    page = client.get("/v1/docs")  # public
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert 'fetch("openapi.json")' in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing from elsewhere


def test_creation_bodies_carry_examples(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    for name, field in (
        ("NamespaceCreate", "name"),
        ("ConfigurationCreate", "document"),
        ("SecretCreate", "value"),
        ("AgentCreate", "name"),
    ):
        assert "example" in schemas[name]["properties"][field], (name, field)


def request_schemas() -> dict[str, type[common.Request]]:
    """Every request body schema by its name in the document (the class's name)."""
    found: dict[str, type[common.Request]] = {}
    waiting: list[type[common.Request]] = [common.Request]
    while waiting:
        schema = waiting.pop()
        found[schema.__name__] = schema
        waiting.extend(schema.__subclasses__())
    return found


def test_every_request_body_has_an_example_its_schema_admits(document: dict[str, Any]) -> None:
    """The example of each request body validates against the document's schema of it and
    loads through the API's own schema (which refuses unknown fields)."""
    bodies = [
        (f"{method} {path}", operation["requestBody"]["content"]["application/json"])
        for path, method, operation in operations_of(document)
        if "requestBody" in operation
    ]
    assert len(bodies) >= 16
    assert [name for name, media in bodies if "example" not in media] == []
    loaders = request_schemas()
    for name, media in bodies:
        schema = media["schema"]
        validator = jsonschema_rs.Draft4Validator({**schema, "components": document["components"]})
        assert [error.message for error in validator.iter_errors(media["example"])] == [], name
        loaders[schema["$ref"].rpartition("/")[2]]().load(media["example"])


def test_grant_runtime_access_documents_no_static_default(document: dict[str, Any]) -> None:
    """Left out, the caller's permission decides (docs/api.md): no ``default`` to mislead."""
    field = document["components"]["schemas"]["AgentCreate"]["properties"]["grantRuntimeAccess"]
    assert field["type"] == "boolean" and "default" not in field
    assert "installation:administer" in field["description"]


def test_a_body_without_an_example_is_refused_at_declaration() -> None:
    class Undocumented(common.Request):
        pass

    blueprint = blueprints.Blueprint("tests.undocumented", url_prefix="/x", description="x")
    with pytest.raises(TypeError, match="EXAMPLE"):
        blueprint.operation("POST", "", body=Undocumented, requires="namespace:create")


def test_the_document_has_what_the_linters_ask_of_its_info(document: dict[str, Any]) -> None:
    assert document["info"]["contact"]["name"] and document["info"]["license"]["name"]
    whole = json.dumps(document)
    schemas = document["components"]["schemas"]
    unused = [name for name in schemas if f'"#/components/schemas/{name}"' not in whole]
    assert unused == [], unused


def test_the_document_names_its_servers(document: dict[str, Any]) -> None:
    urls = [server["url"] for server in document["servers"]]
    assert urls[0] == "/" and "http://127.0.0.1:8000" in urls
    assert all(server.get("description") for server in document["servers"])


def test_every_operation_is_described(document: dict[str, Any]) -> None:
    """Spectral's ``operation-description``: every operation has a description (the view's
    docstring after its summary, else what the conventions say: its permissions)."""
    described = {
        f"{method} {path}": operation.get("description", "")
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert [name for name, text in described.items() if not text.strip()] == []
    assert "`namespace:read`" in described["get /v1/namespaces"]
    assert "Idempotency-Key" in described["post /v1/namespaces"]
    assert described["get /healthz"] == "Needs no credentials."
