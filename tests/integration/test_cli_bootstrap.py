"""``occ bootstrap`` against the test database: the first key, --if-missing, --key-file."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

from occ import cli, errors, ids
from occ.controller import installation
from occ.controller.authentication import authenticate
from occ.db import Database
from occ.state import api_keys, iam_policy, models
from tests.support import databases

PEPPER = "cli-test-pepper"


@pytest.fixture
def run(db: Database, database_urls: databases.DatabaseUrls) -> Any:
    """Run ``occ`` with the test database and pepper in the environment."""

    def invoke(*args: str, url: str | None = None) -> Result:
        env = {"OCC_DATABASE_URL": url or database_urls.app, "OCC_API_KEY_PEPPER": PEPPER}
        return CliRunner().invoke(cli.cli, list(args), env=env, catch_exceptions=False)

    return invoke


def line(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    [only] = result.stdout.splitlines()
    document: dict[str, Any] = json.loads(only)
    return document


def count(db: Database, model: type[models.Base]) -> int:
    with db.transaction() as session:
        return int(session.scalar(sa.select(sa.func.count()).select_from(model)) or 0)


def test_bootstrap_prints_a_working_key_once(db: Database, run: Any) -> None:
    printed = line(run("bootstrap", "--name", "prod", "--admin-name", "Ada"))
    assert set(printed) == {"installationId", "principalId", "keyId", "key", "created"}
    assert printed["created"] is True
    assert ids.is_valid("installation", printed["installationId"])
    assert printed["key"].startswith(f"occ_{printed['keyId']}_")
    assert authenticate(db, presented_key=printed["key"], pepper=PEPPER) == printed["principalId"]
    with pytest.raises(errors.Unauthenticated):
        authenticate(db, presented_key=printed["key"], pepper="development-pepper")

    with db.transaction() as session:
        admin = iam_policy.get_principal(session, printed["principalId"])
        assert admin is not None and (admin.name, admin.kind) == ("Ada", "human")
        details = session.scalars(sa.text("SELECT details::text FROM occ.audit_events")).all()
        installation_name = session.scalar(sa.select(models.Installation.name))
    assert installation_name == "prod"
    secret = printed["key"].rsplit("_", 1)[1]
    assert not any(secret in text for text in details)


def test_an_existing_installation_is_an_error_without_if_missing(db: Database, run: Any) -> None:
    first = line(run("bootstrap"))
    again = run("bootstrap")
    assert again.exit_code == 2
    assert again.stdout == ""
    [message] = again.stderr.splitlines()
    assert message.startswith("occ: error: RESOURCE_CONFLICT:") and "--if-missing" in message
    assert count(db, models.ApiKey) == 1

    repeat = line(run("bootstrap", "--if-missing"))
    assert repeat == {"installationId": first["installationId"], "created": False}
    assert count(db, models.ApiKey) == 1
    assert count(db, models.Principal) == 1


def test_if_missing_creates_on_an_empty_database(db: Database, run: Any) -> None:
    printed = line(run("bootstrap", "--if-missing"))
    assert printed["created"] is True and "key" in printed


def test_key_file_gets_the_key_with_mode_0600(db: Database, run: Any, tmp_path: Path) -> None:
    key_file = tmp_path / "admin.key"
    printed = line(run("bootstrap", "--key-file", str(key_file)))
    assert "key" not in printed
    assert printed["keyFile"] == str(key_file)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text()
    assert key.endswith("\n") and key.count("\n") == 1
    assert authenticate(db, presented_key=key.strip(), pepper=PEPPER) == printed["principalId"]
    assert key.strip().startswith(f"occ_{printed['keyId']}_")


def test_key_file_is_never_overwritten(db: Database, run: Any, tmp_path: Path) -> None:
    key_file = tmp_path / "admin.key"
    key_file.write_text("precious\n")
    refused = run("bootstrap", "--key-file", str(key_file))
    assert refused.exit_code == 2 and refused.stdout == ""
    assert len(refused.stderr.splitlines()) == 1 and "refusing to overwrite" in refused.stderr
    assert key_file.read_text() == "precious\n"
    assert count(db, models.Installation) == 0  # refused before anything was created


def test_key_file_with_if_missing_on_a_later_run(db: Database, run: Any, tmp_path: Path) -> None:
    key_file = tmp_path / "admin.key"
    first = line(run("bootstrap", "--if-missing", "--key-file", str(key_file)))
    key = key_file.read_text()
    again = line(run("bootstrap", "--if-missing", "--key-file", str(key_file)))
    assert again == {"installationId": first["installationId"], "created": False}
    assert key_file.read_text() == key
    other_file = tmp_path / "other.key"
    third = line(run("bootstrap", "--if-missing", "--key-file", str(other_file)))
    assert third["created"] is False
    assert not other_file.exists()  # created for nothing, then removed


def test_existing_installation_with_a_new_key_file_leaves_no_file(
    db: Database, run: Any, tmp_path: Path
) -> None:
    line(run("bootstrap"))
    key_file = tmp_path / "admin.key"
    refused = run("bootstrap", "--key-file", str(key_file))
    assert refused.exit_code == 2
    assert not key_file.exists()


def test_an_interrupted_bootstrap_gets_its_key_on_the_next_run(db: Database, run: Any) -> None:
    boot = installation.bootstrap_installation(db, name="occ", admin_name="admin")
    assert count(db, models.ApiKey) == 0
    finished = line(run("bootstrap", "--if-missing"))
    assert finished["created"] is False and finished["principalId"] == boot.admin_principal_id
    assert authenticate(db, presented_key=finished["key"], pepper=PEPPER) == (
        boot.admin_principal_id
    )
    with db.transaction() as session:
        assert boot.admin_principal_id is not None
        api_keys.revoke(session, finished["keyId"])
    # a key was issued once: later runs never mint another, even if it was revoked
    assert line(run("bootstrap", "--if-missing")) == {
        "installationId": boot.installation_id,
        "created": False,
    }


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--name", " padded"], "/name"),
        (["--admin-name", ""], "/adminName"),
    ],
)
def test_invalid_names_are_one_line_errors(
    db: Database, run: Any, args: list[str], fragment: str
) -> None:
    result = run("bootstrap", *args)
    assert result.exit_code == 2 and result.stdout == ""
    [message] = result.stderr.splitlines()
    assert message.startswith("occ: error: INVALID_REQUEST:") and fragment in message
    assert count(db, models.Installation) == 0


def test_an_unreachable_database_is_a_one_line_error(
    db: Database, run: Any, tmp_path: Path
) -> None:
    url = "postgresql://occ_app:hunter2@127.0.0.1:1/occ"
    key_file = tmp_path / "admin.key"
    result = run("bootstrap", "--key-file", str(key_file), url=url)
    assert result.exit_code == 2 and result.stdout == ""
    [message] = result.stderr.splitlines()
    assert message.startswith("occ: error: DEPENDENCY_UNAVAILABLE:")
    assert "hunter2" not in message
    assert not key_file.exists()
