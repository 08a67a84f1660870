"""``occ bootstrap`` against the test database: the first key, --if-missing, --key-file, and
the break-glass --recover-admin."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

from occ import cli
from occ.controller import access_bindings, installation, principals
from occ.controller.authentication import authenticate
from occ.foundation import errors, ids
from occ.state import api_keys, audit, iam_policy, models, restrictions
from occ.state import roles as role_rows
from occ.state.db import Database
from tests.support import databases

PEPPER = "cli-test-pepper"


@pytest.fixture
def run(db: Database, database_urls: databases.DatabaseUrls) -> Any:
    """Run ``occ`` with the test database and pepper in the environment."""

    def invoke(*args: str, url: str | None = None) -> Result:
        env = {
            "OCC_ENV": "development",
            "OCC_DATABASE_URL": url or database_urls.app,
            "OCC_API_KEY_PEPPER": PEPPER,
        }
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


# -- --if-missing never mints for another principal; --recover-admin -------------------------


def test_if_missing_never_mints_a_key_for_another_administrator(db: Database, run: Any) -> None:
    first = line(run("bootstrap"))
    admin = first["principalId"]
    role = installation.bootstrap_installation(db, name="occ", admin_name="x")
    assert role.administrator_role_id is not None and role.admin_principal_id == admin
    robot = principals.create_principal(
        db, admin, principals.CreatePrincipal(name="robot", kind=iam_policy.PrincipalKind.SERVICE)
    )
    access_bindings.create_binding(
        db,
        admin,
        access_bindings.CreateBinding(role_id=role.administrator_role_id, principal_id=robot.id),
    )
    # the robot has never had a key and holds the administrator Role: still nothing is minted
    repeat = line(run("bootstrap", "--if-missing"))
    assert repeat == {"installationId": first["installationId"], "created": False}
    assert count(db, models.ApiKey) == 1


@pytest.fixture
def recover(database_urls: databases.DatabaseUrls) -> Any:
    """Run ``occ bootstrap --recover-admin`` as the owner; the app URL points nowhere, so the
    command can only have used the migration URL."""

    def invoke(*args: str) -> Result:
        env = {
            "OCC_ENV": "development",
            "OCC_DATABASE_URL": "postgresql://occ_app:wrong@127.0.0.1:1/occ",
            "OCC_MIGRATION_DATABASE_URL": database_urls.owner,
            "OCC_API_KEY_PEPPER": PEPPER,
        }
        return CliRunner().invoke(
            cli.cli, ["bootstrap", "--recover-admin", *args], env=env, catch_exceptions=False
        )

    return invoke


def test_recover_admin_undoes_a_lockout_forced_in_the_database(
    db: Database, run: Any, recover: Any, tmp_path: Path
) -> None:
    first = line(run("bootstrap"))
    admin, installation_id = first["principalId"], first["installationId"]
    # what the API now refuses, forced around it: every way back is gone at once
    with db.transaction() as session:
        api_keys.revoke(session, first["keyId"])
        iam_policy.disable_principal(session, admin)
        for binding in iam_policy.list_bindings(session, principal_id=admin):
            iam_policy.revoke_binding(session, binding.id)
        role = role_rows.find_role(session, name=installation.ADMINISTRATOR_ROLE)
        assert role is not None
        role_rows.delete_role(session, role.id)
        rule = restrictions.insert(
            session, permission="installation:administer", created_by=admin, principal_id=admin
        )
    with pytest.raises(errors.Unauthenticated):
        authenticate(db, presented_key=first["key"], pepper=PEPPER)

    key_file = tmp_path / "recovered.key"
    printed = line(recover("--key-file", str(key_file)))
    assert printed == {
        "installationId": installation_id,
        "principalId": admin,
        "keyId": printed["keyId"],
        "keyFile": str(key_file),
        "recovered": True,
        "reenabled": True,
        "rebound": True,
    }
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert key.startswith(f"occ_{printed['keyId']}_")

    # the new key signs in and administers; the old one stays revoked
    assert authenticate(db, presented_key=key, pepper=PEPPER) == admin
    assert {p.id for p in principals.list_principals(db, actor_id=admin)} >= {admin}
    with pytest.raises(errors.Unauthenticated):
        authenticate(db, presented_key=first["key"], pepper=PEPPER)

    with db.transaction() as session:
        [event] = [
            e
            for e in audit.list_events(session, resource_id=installation_id)
            if e.action == "installation.recover_admin"
        ]
        assert restrictions.get(session, rule.id) is None
    assert (event.kind, event.actor_id, event.outcome) == ("bootstrap", admin, "success")
    assert event.details["keyId"] == printed["keyId"]
    assert event.details["liftedRestrictionIds"] == [rule.id]
    assert event.details["reenabled"] is True and event.details["rebound"] is True
    assert key.rsplit("_", 1)[1] not in json.dumps(dict(event.details))


def test_recover_admin_prints_the_key_without_a_key_file(
    db: Database, run: Any, recover: Any
) -> None:
    first = line(run("bootstrap"))
    printed = line(recover())
    assert (printed["reenabled"], printed["rebound"]) == (False, False)
    assert authenticate(db, presented_key=printed["key"], pepper=PEPPER) == first["principalId"]
    # the first key still works too: recovery adds a key, it revokes none
    assert authenticate(db, presented_key=first["key"], pepper=PEPPER) == first["principalId"]


def test_recover_admin_refuses_what_it_cannot_do(
    db: Database, recover: Any, tmp_path: Path
) -> None:
    key_file = tmp_path / "admin.key"
    nothing = recover("--key-file", str(key_file))
    assert nothing.exit_code == 2 and nothing.stdout == ""
    assert nothing.stderr.startswith("occ: error: NOT_FOUND:")
    assert not key_file.exists()
    both = recover("--if-missing")
    assert both.exit_code == 2 and "--if-missing" in both.stderr
    assert count(db, models.ApiKey) == 0
