"""Fixtures of the fake Kubernetes API server's own tests: one server per module, reset per
test, and the real ``kubernetes`` client's API classes pointed at it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
import urllib3
from kubernetes import client, config

from tests.support import kube_api

T = TypeVar("T")


def present(value: T | None) -> T:
    """A field the server must have filled in: the client's models type every field optional."""
    assert value is not None
    return value


def wire(document: Mapping[str, Any]) -> Any:
    """``document`` as a request body, sent as it is. The client serialises a dict unchanged,
    though its annotations name only its models; these tests write the wire format, unknown and
    invalid fields included, as the driver does."""
    return document


def document(answer: object) -> dict[str, Any]:
    """An answer the client hands back as a dict, undecoded (its deletes are typed ``object``)."""
    assert isinstance(answer, dict)
    return answer


def raw(response: object) -> urllib3.BaseHTTPResponse:
    """The undecoded answer of a ``_preload_content=False`` call (annotated as the model)."""
    assert isinstance(response, urllib3.BaseHTTPResponse)
    return response


@dataclass(frozen=True)
class Clients:
    api_client: client.ApiClient
    core: client.CoreV1Api
    apps: client.AppsV1Api
    networking: client.NetworkingV1Api
    discovery: client.DiscoveryV1Api
    authorization: client.AuthorizationV1Api


def api_client_for(fake: kube_api.FakeKubeAPI, token: str | None = None) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config_from_dict(
        fake.kubeconfig_dict(token=token), client_configuration=configuration
    )
    configuration.retries = False  # a fault must surface, not be retried away by urllib3
    return client.ApiClient(configuration)


@pytest.fixture(scope="module")
def server() -> Iterator[kube_api.FakeKubeAPI]:
    with kube_api.FakeKubeAPI(validate=True, schema_version="1.34") as fake:
        yield fake


@pytest.fixture(scope="module")
def clients(server: kube_api.FakeKubeAPI) -> Iterator[Clients]:
    with api_client_for(server) as api_client:
        yield Clients(
            api_client,
            client.CoreV1Api(api_client),
            client.AppsV1Api(api_client),
            client.NetworkingV1Api(api_client),
            client.DiscoveryV1Api(api_client),
            client.AuthorizationV1Api(api_client),
        )


@pytest.fixture
def fake(server: kube_api.FakeKubeAPI) -> kube_api.FakeKubeAPI:
    server.reset()
    return server


@pytest.fixture
def ns(fake: kube_api.FakeKubeAPI, clients: Clients) -> str:
    clients.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="team-a")))
    return "team-a"
