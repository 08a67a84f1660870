"""The administrator's side of the end-to-end tests: checked calls to a running occ API, and the
objects a deploy needs (a ready Namespace, a Configuration, a harness Secret, embedded Agents)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.e2e.test_dev import _request, _wait_for_status


@dataclass(frozen=True)
class Api:
    """The occ API at ``url``, called with the administrator's ``key``."""

    url: str
    key: str

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The ``data`` of the answer, which must be a success."""
        code, document = _request(method, f"{self.url}{path}", self.key, body)
        assert code < 300, (method, path, code, document)
        return document["data"]


def ready_namespace(api: Api, name: str) -> str:
    """A new Namespace called ``name``, once it is ready; its id."""
    namespace_id: str = api.call("POST", "/v1/namespaces", {"name": name})["id"]
    _wait_for_status(api.url, api.key, namespace_id, "ready")
    return namespace_id


def embedded_agents(api: Api, namespace_id: str, names: Sequence[str]) -> list[str]:
    """Agents called ``names`` in the Namespace, embedded, of one empty Configuration and one
    harness Secret, their service principals granted what a deploy needs; their ids."""
    base = f"/v1/namespaces/{namespace_id}"
    configuration = api.call("POST", f"{base}/configurations", {"name": "c", "document": {}})
    secret = api.call("POST", f"{base}/secrets", {"name": "s", "value": "harness-credential"})
    return [
        api.call(
            "POST",
            f"{base}/agents",
            {
                "name": name,
                "configurationId": configuration["id"],
                "harness": {"id": "openclaw", "version": "2026.1.0"},
                "executionMode": "embedded",
                "harnessAuth": {"kind": "secret", "secretId": secret["id"]},
                "grantRuntimeAccess": True,
            },
        )["id"]
        for name in names
    ]
