"""Backup and restore as docs/operations.md describes it: ``pg_dump`` of the database, restored
with ``pg_restore`` into an empty one, serves again with the same API-key pepper and secret
key, and only with them: the keys are part of the backup."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from occ.foundation import errors
from occ.settings.config import Settings
from occ.state import secret_store, secrets
from occ.state.db import Database
from occ.web.app import create_app
from tests.integration.web.conftest import PEPPER, Caller
from tests.support import databases

SECRET_KEY = "test-secret-key"
"""The web tests' secret key (their ``settings`` fixture)."""
VALUE = "sk-restored-" + uuid.uuid4().hex


def test_a_dump_restores_into_an_empty_database_and_serves_with_the_same_keys(
    client: FlaskClient,
    admin: Caller,
    ns: str,
    database_urls: databases.DatabaseUrls,
    tmp_path: Path,
) -> None:
    created = client.post(
        f"/v1/namespaces/{ns}/secrets", json={"name": "kept", "value": VALUE}, headers=admin.headers
    )
    assert created.status_code == 201 and created.json is not None, created.json
    secret_id = created.json["data"]["id"]

    dump = tmp_path / "occ.dump"
    owner = database_urls.owner.replace("postgresql+psycopg://", "postgresql://")
    subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", owner], check=True)
    assert VALUE.encode() not in dump.read_bytes()  # Secret values are sealed in the dump too

    with databases.unmigrated(f"occ_restore_{uuid.uuid4().hex[:8]}") as restored:
        target = restored.owner.replace("postgresql+psycopg://", "postgresql://")
        subprocess.run(
            ["pg_restore", "--exit-on-error", "--no-owner", f"--dbname={target}", str(dump)],
            check=True,
        )
        settings = Settings(
            database_url=restored.owner, api_key_pepper=PEPPER, secret_key=SECRET_KEY
        )
        app = create_app(settings)
        answer = app.test_client().get(f"/v1/namespaces/{ns}/secrets", headers=admin.headers)
        assert answer.status_code == 200 and answer.json is not None, answer.json
        assert [s["id"] for s in answer.json["data"]] == [secret_id]

        database = Database(restored.owner, pool_size=1)
        try:
            with database.transaction() as session:
                sealed = secrets.sealed_value(session, ns, secret_id)
        finally:
            database.dispose()
        assert sealed is not None
        store = secret_store.SecretStore.from_settings(settings)
        assert store.unseal(ns, secret_id, sealed) == VALUE
        other = secret_store.SecretStore.from_settings(settings.replace(secret_key="x" * 40))
        with pytest.raises(errors.SecretUnreadable):
            other.unseal(ns, secret_id, sealed)
        # another pepper: every API key is refused
        elsewhere = create_app(settings.replace(api_key_pepper="another-pepper"))
        refused = elsewhere.test_client().get("/v1/namespaces", headers=admin.headers)
        assert refused.status_code == 401
