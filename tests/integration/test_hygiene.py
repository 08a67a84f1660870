"""Secret hygiene end to end: a deploy through the API and real workers leaves no secret behind.

The run has known passwords in its database and broker URLs (a private PostgreSQL and a
password-protected private Redis), a known pepper, secret key and Secret value. It drives a
deploy through the API (gunicorn) with a control and a driver worker, beat and Flower, and
provokes error responses; then it scans everything the run left: every log file, the work rows
and audit events, the broker's messages as they passed, ``celery inspect conf/active/reserved``,
Flower's ``/api/workers`` and ``/api/tasks``, the error bodies and the local driver's files
(except the credential file it hands to the gateway). ``test_the_scan_finds_a_planted_secret``
shows the scan can fail.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from occ.controller import installation
from occ.drivers.compute.local import LocalComputeDriver, store
from occ.state import api_keys
from occ.state.db import Database
from tests.support import databases, servers
from tests.support.processes import wait_for

CELERY = [sys.executable, "-m", "celery", "-A", "occ.tasks.app"]


def scan(texts: dict[str, str], known: dict[str, str]) -> list[str]:
    """``"<secret> in <source>"`` for every known secret value found in any text."""
    return [
        f"{name} in {source}"
        for source, text in texts.items()
        for name, value in known.items()
        if value in text
    ]


def test_the_scan_finds_a_planted_secret(tmp_path: Path) -> None:
    known = {"database password": "pw-" + secrets.token_hex(8)}
    log = tmp_path / "worker.log"
    log.write_text('{"event":"worker.started"}\n', encoding="utf-8")
    assert scan({"worker.log": log.read_text(encoding="utf-8")}, known) == []
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"connecting to postgresql://occ_app:{known['database password']}@db/occ\n")
    assert scan({"worker.log": log.read_text(encoding="utf-8")}, known) == [
        "database password in worker.log"
    ]


# -- the run -----------------------------------------------------------------------------------


class Api:
    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url, key
        self.error_bodies: list[str] = []

    def call(self, method: str, path: str, body: Any = None, *, key: str | None = None) -> Any:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {key or self.key}",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", errors="replace")
            self.error_bodies.append(text)
            return {"status": error.code, "body": text}


def _http(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body: bytes = response.read()
            return body.decode("utf-8", errors="replace")
    except OSError:
        return ""


@pytest.fixture
def known() -> dict[str, str]:
    return {
        "database password": "dbpw" + secrets.token_hex(12),
        "broker password": "brokerpw" + secrets.token_hex(12),
        "pepper": "pepper" + secrets.token_hex(20),
        "secret key": "secretkey" + secrets.token_hex(20),
        "secret value": "sk-value-" + secrets.token_hex(12),
    }


@pytest.fixture
def private_services(tmp_path: Path, known: dict[str, str]) -> Iterator[tuple[str, str, str]]:
    postgres = servers.PostgresServer()
    redis_server = servers.RedisServer(tmp_path / "redis", password=known["broker password"])
    try:
        postgres.start()
        redis_server.start()
        previous = os.environ.get("OCC_TEST_DATABASE_URL")
        os.environ["OCC_TEST_DATABASE_URL"] = postgres.url
        try:
            urls = databases.create_test_database("occ_hygiene")
        finally:
            os.environ["OCC_TEST_DATABASE_URL"] = previous or ""
        app_url = (
            make_url(urls.app)
            .set(password=known["database password"])
            .render_as_string(hide_password=False)
        )
        yield app_url, urls.owner, redis_server.url
    finally:
        redis_server.close()
        postgres.close()


def test_a_deploy_leaves_no_secret_in_anything_the_run_leaves_behind(
    tmp_path: Path, known: dict[str, str], private_services: tuple[str, str, str]
) -> None:
    app_url, owner_url, broker_url = private_services
    assert known["database password"] in app_url and known["broker password"] in broker_url
    local_root = tmp_path / "local"
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCC_")}
    env.update(
        OCC_ENV="development",
        OCC_DATABASE_URL=app_url,
        OCC_BROKER_URL=broker_url,
        OCC_API_KEY_PEPPER=known["pepper"],
        OCC_SECRET_KEY=known["secret key"],
        OCC_LOCAL_ROOT=str(local_root),
        OCC_CLAIM_INTERVAL_MS="500",
        OCC_RECOVERY_INTERVAL_MS="500",
        FLOWER_UNAUTHENTICATED_API="true",
    )
    owner = Database(owner_url, pool_size=2)
    with owner.transaction() as session:  # the role's password is the known one
        session.execute(sa.text(f"ALTER ROLE occ_app PASSWORD '{known['database password']}'"))
    app_db = Database(app_url, pool_size=2)
    boot = installation.bootstrap_installation(app_db, name="hygiene", admin_name="admin")
    assert boot.admin_principal_id is not None
    with app_db.transaction() as session:
        key = api_keys.mint(session, principal_id=boot.admin_principal_id, pepper=known["pepper"])
    api_port, flower_port = servers.free_port(), servers.free_port()
    children: list[subprocess.Popen[bytes]] = []

    def start(name: str, command: list[str], **extra: str) -> None:
        with (logs / f"{name}.log").open("ab") as log:
            children.append(
                subprocess.Popen(
                    command,
                    env={**env, **extra},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    worker = ["worker", "--without-gossip", "--without-mingle", "-E", "-l", "INFO"]
    start("control", [*CELERY, *worker, "-Q", "occ.control", "-P", "threads", "-n", "control@%h"])
    start(
        "drivers",
        [*CELERY, *worker, "-Q", "occ.drivers", "-P", "prefork", "-c", "2", "-n", "drivers@%h"],
        OCC_WORKER_READINESS_PATH=str(tmp_path / "drivers.ready"),
    )
    start("beat", [*CELERY, "beat", "-S", "celery.beat:Scheduler", "-l", "INFO"])
    start(
        "api",
        [sys.executable, "-m", "gunicorn", "occ.web.app:create_app()", "--bind",
         f"127.0.0.1:{api_port}", "--workers", "1", "--access-logfile", "-"],
    )  # fmt: skip
    start(
        "flower",
        [*CELERY, "flower", f"--port={flower_port}", "--address=127.0.0.1"],
    )
    broker_seen: list[str] = []
    watching = threading.Event()
    threading.Thread(
        target=_watch_broker, args=(broker_url, watching, broker_seen), daemon=True
    ).start()
    try:
        wait_for((tmp_path / "drivers.ready").exists, timeout=60, message="the driver worker")
        wait_for(
            lambda: _http(f"http://127.0.0.1:{api_port}/readyz"), timeout=60, message="the API"
        )
        api = Api(f"http://127.0.0.1:{api_port}", key.plaintext)
        inspected = _deploy(api, known["secret value"], broker_env=env)
        wait_for(
            lambda: "drivers@" in _http(f"http://127.0.0.1:{flower_port}/api/workers?refresh=1"),
            timeout=30,
            message="Flower to see the workers",
        )
        flower = _http(f"http://127.0.0.1:{flower_port}/api/workers?refresh=1") + _http(
            f"http://127.0.0.1:{flower_port}/api/tasks"
        )
        # error bodies: a wrong key, a duplicate Secret carrying the value, a bad name, a 404
        api.call("GET", "/v1/namespaces", key=known["pepper"])
        [namespace_id] = [n["id"] for n in api.call("GET", "/v1/namespaces")["data"]]
        for name in ("harness-key", ""):
            api.call(
                "POST",
                f"/v1/namespaces/{namespace_id}/secrets",
                {"name": name, "value": known["secret value"]},
            )
        api.call("GET", f"/v1/namespaces/{namespace_id}/agents/agt_missing")
        assert [json.loads(body)["status"] for body in api.error_bodies] == [401, 409, 400, 404]
        inspected["conf"] = _celery(env, "inspect", "conf")
    finally:
        watching.set()
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, 9)
        for pid in LocalComputeDriver(local_root).gateway_processes():
            os.kill(pid, 9)
    texts: dict[str, str] = {
        f"logs/{path.name}": path.read_text(encoding="utf-8", errors="replace")
        for path in logs.iterdir()
    }
    texts |= {f"celery inspect {name}": text for name, text in inspected.items()}
    texts["flower /api/workers and /api/tasks"] = flower
    texts["error bodies"] = "\n".join(api.error_bodies)
    texts["broker messages"] = "\n".join(broker_seen)
    with owner.transaction() as session:
        for table in ("controller_work", "audit_events", "agent_revisions", "agents"):
            rows = session.execute(sa.text(f"SELECT to_jsonb(t)::text FROM occ.{table} t"))
            texts[f"table {table}"] = "\n".join(rows.scalars())
    for path in local_root.rglob("*"):
        if path.is_file() and path.name != store.CREDENTIAL:
            texts[f"local/{path.relative_to(local_root)}"] = path.read_text(errors="replace")
    app_db.dispose()
    owner.dispose()
    assert "broker_url" in texts["celery inspect conf"]  # the scan saw the real configuration
    assert texts["broker messages"] and texts["flower /api/workers and /api/tasks"]
    assert scan(texts, known) == []


def _deploy(api: Api, secret_value: str, *, broker_env: dict[str, str]) -> dict[str, str]:
    """The README's session: Namespace, Configuration, Secret, Agent, grants, deploy."""
    namespace = api.call("POST", "/v1/namespaces", {"name": "team-a"})["data"]["id"]
    wait_for(
        lambda: api.call("GET", f"/v1/namespaces/{namespace}")["data"]["status"] == "ready",
        timeout=30,
        message="the namespace to become ready",
    )
    base = f"/v1/namespaces/{namespace}"
    configuration = api.call(
        "POST", f"{base}/configurations", {"name": "default", "document": {"model": "m"}}
    )["data"]["id"]
    secret = api.call("POST", f"{base}/secrets", {"name": "harness-key", "value": secret_value})
    agent = api.call(
        "POST",
        f"{base}/agents",
        {
            "name": "assistant",
            "configurationId": configuration,
            "harness": {"id": "openclaw", "version": "1.0.0"},
            "executionMode": "embedded",
            "harnessAuth": {"kind": "secret", "secretId": secret["data"]["id"]},
            "grantRuntimeAccess": False,  # the grant is made by hand below
        },
    )["data"]
    role = api.call(
        "POST",
        "/v1/roles",
        {
            "name": "agent-runtime",
            "namespaceId": namespace,
            "permissions": ["configuration:read", "secret:operate"],
        },
    )["data"]["id"]
    api.call(
        "POST",
        "/v1/access-bindings",
        {"roleId": role, "principalId": agent["servicePrincipalId"], "namespaceId": namespace},
    )
    deployment = api.call("POST", f"{base}/agents/{agent['id']}/deploy")["data"]["deploymentId"]
    inspected = {"active": "", "reserved": ""}

    def active() -> bool:
        for name in ("active", "reserved"):
            inspected[name] += _celery(broker_env, "inspect", name)
        state = api.call("GET", f"{base}/agents/{agent['id']}/deployments/{deployment}")
        return bool(state["data"]["state"] == "active")

    wait_for(active, timeout=60, interval=0.2, message="the deployment to become active")
    return inspected


def _celery(env: dict[str, str], *arguments: str) -> str:
    done = subprocess.run(
        [*CELERY, *arguments, "--json", "--timeout", "2"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")


def _text(value: bytes | str) -> str:
    """A Redis value as text (the client answers bytes: it does not decode responses)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _watch_broker(url: str, stop: threading.Event, seen: list[str]) -> None:
    """Copy every message body that sits in Redis while the run goes on."""
    import redis  # noqa: PLC0415 - only this watcher needs the client

    client = redis.Redis.from_url(url)
    while not stop.wait(0.02):
        try:
            for key in client.scan_iter(count=1000):
                kind = client.type(key)
                if kind == b"list":
                    seen += [_text(item) for item in client.lrange(key, 0, -1)]
                elif kind == b"hash":
                    seen += [_text(v) for v in client.hvals(key)]
        except redis.RedisError:
            time.sleep(0.1)
