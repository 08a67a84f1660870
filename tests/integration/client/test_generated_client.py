"""A client generated from the OpenAPI document by openapi-python-client does the whole first
session, unpatched: a Namespace to ready, a Configuration, a Secret, an Agent granted runtime
access, and its deploy to active, against a running occ (API, workers, beat)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.client.conftest import Operator

pytestmark = pytest.mark.timeout(300)

PACKAGE = "occ_generated"


def _generated(operator: Operator, where: Path) -> Any:
    document = where / "openapi.json"
    with urllib.request.urlopen(f"{operator.api_url}/v1/openapi.json", timeout=10) as answer:
        document.write_bytes(answer.read())
    binaries = Path(sys.executable).parent
    ran = subprocess.run(
        [
            str(binaries / "openapi-python-client"), "generate", "--path", str(document),
            "--output-path", str(where / PACKAGE), "--meta", "none",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{binaries}{os.pathsep}{os.environ.get('PATH', '')}"},
        timeout=180,
        check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    sys.path.insert(0, str(where))
    return importlib.import_module(PACKAGE)


def _call(package: Any, module: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``sync`` of one generated operation module; the answer as a dict, failing on a problem."""
    operation = importlib.import_module(f"{package.__name__}.api.{module}")
    answer = operation.sync(*args, **kwargs)
    document = answer.to_dict()
    assert "data" in document, document
    data: dict[str, Any] = document["data"]
    return data


def _until(read: Any, field: str, value: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current: dict[str, Any] = read()
        if current[field] == value:
            return current
        time.sleep(0.3)
    raise AssertionError(f"{field} is not {value} after {timeout} s: {current}")


def test_a_generated_client_does_the_first_session(operator: Operator, tmp_path: Path) -> None:
    package = _generated(operator, tmp_path)
    models = importlib.import_module(f"{PACKAGE}.models")
    client = package.AuthenticatedClient(
        base_url=operator.api_url, token=operator.key_file.read_text().strip()
    )
    try:
        namespace = _call(
            package,
            "namespaces.create_namespace",
            client=client,
            body=models.NamespaceCreate.from_dict({"name": "team-a"}),
        )
        namespace_id = namespace["id"]
        _until(
            lambda: _call(package, "namespaces.get_namespace", namespace_id, client=client),
            "status",
            "ready",
        )
        configuration = _call(
            package,
            "configurations.create_configuration",
            namespace_id,
            client=client,
            body=models.ConfigurationCreate.from_dict(
                {"name": "default", "document": {"model": "gpt-5"}}
            ),
        )
        secret = _call(
            package,
            "secrets.create_secret",
            namespace_id,
            client=client,
            body=models.SecretCreate.from_dict({"name": "token", "value": "generated-s3cr3t"}),
        )
        agent = _call(
            package,
            "agents.create_agent",
            namespace_id,
            client=client,
            body=models.AgentCreate.from_dict(
                {
                    "name": "assistant",
                    "configurationId": configuration["id"],
                    "harness": {"id": "openclaw", "version": "1.0.0"},
                    "executionMode": "embedded",
                    "harnessAuth": {"kind": "secret", "secretId": secret["id"]},
                    "grantRuntimeAccess": True,
                }
            ),
        )
        accepted = _call(package, "agents.deploy_agent", namespace_id, agent["id"], client=client)
        deployment = _until(
            lambda: _call(
                package,
                "agents.get_deployment",
                namespace_id,
                agent["id"],
                accepted["deploymentId"],
                client=client,
            ),
            "state",
            "active",
        )
        assert deployment["revisionId"] == accepted["revision"]["id"]
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]
