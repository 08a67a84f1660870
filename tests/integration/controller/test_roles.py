"""IAM administration use cases on real PostgreSQL: authorization, denial audit, atomicity,
the last-administrator guard under concurrency, and the bootstrap key."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from occ.controller import access_bindings, installation, principals, restrictions, roles
from occ.controller.authentication import authenticate
from occ.foundation import errors, ids
from occ.state import api_keys, audit, iam_policy, models
from occ.state.db import Database
from tests.integration.controller.support import count, events
from tests.support import grants, rows

PEPPER = "policy-test-pepper"


def someone(db: Database, *permissions: str, name: str = "someone", signed_in: bool = False) -> str:
    """A principal holding ``permissions``; ``signed_in`` gives it a live API key."""
    with db.transaction() as session:
        principal_id = rows.principal(session, name=name)
        if permissions:
            grants.grant(session, principal_id, permissions)
        if signed_in:
            api_keys.mint(session, principal_id=principal_id, pepper=PEPPER)
        return principal_id


def sign_in(db: Database, principal_id: str) -> str:
    """Mint the principal a key (only principals with a live key count as administrators)."""
    with db.transaction() as session:
        return api_keys.mint(session, principal_id=principal_id, pepper=PEPPER).key.id


# -- authorization and denial audit -------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda db, actor: roles.create_role(
            db, actor, roles.CreateRole(name="r", permissions=["agent:read"])
        ),
        lambda db, actor: principals.create_principal(
            db, actor, principals.CreatePrincipal(name="p", kind=iam_policy.PrincipalKind.SERVICE)
        ),
        lambda db, actor: restrictions.create_restriction(
            db, actor, restrictions.CreateRestriction(permission="agent:use")
        ),
        lambda db, actor: roles.list_roles(db, actor_id=actor),
    ],
)
def test_denials_are_audited_and_write_nothing_else(
    db: Database, admin: str, call: Callable[[Database, str], Any]
) -> None:
    reader = someone(db, "installation:read", "namespace:create")
    before = {
        model: count(db, model)
        for model in (models.Role, models.Principal, models.Restriction, models.AccessBinding)
    }
    with pytest.raises(errors.Forbidden):
        call(db, reader)
    assert {model: count(db, model) for model in before} == before
    [denial] = events(db, kind="authorization_denial")
    assert (denial.actor_id, denial.outcome, denial.resource_kind) == (
        reader,
        "denied",
        "installation",
    )
    assert denial.details["permission"] == "installation:administer"
    assert denial.details["reason"] == "no_matching_binding"


def test_a_disabled_administrator_is_denied(db: Database, admin: str) -> None:
    deputy = someone(db, "installation:administer", name="deputy")
    with db.transaction() as session:
        iam_policy.disable_principal(session, deputy)
    with pytest.raises(errors.Forbidden):
        roles.create_role(db, deputy, roles.CreateRole(name="r", permissions=["agent:read"]))
    [denial] = events(db, kind="authorization_denial")
    assert denial.details["reason"] == "principal_disabled"


def test_a_namespace_principal_cannot_administer(db: Database, admin: str) -> None:
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=admin)
        scoped = rows.principal(session, kind="service", namespace_id=namespace_id)
        grants.grant(session, scoped, ["installation:administer"])
    with pytest.raises(errors.Forbidden):
        principals.list_principals(db, actor_id=scoped)


def test_malformed_ids_answer_before_any_query(
    db: Database, admin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_transactions(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a malformed id reached the database")

    monkeypatch.setattr(db, "transaction", no_transactions)
    monkeypatch.setattr(db, "snapshot", no_transactions)
    with pytest.raises(errors.NotFound):
        roles.get_role(db, actor_id=admin, role_id="rol_nope")
    with pytest.raises(errors.NotFound):
        principals.revoke_api_key(
            db, admin, principals.RevokeApiKey(principal_id=admin, key_id="key_1")
        )
    with pytest.raises(errors.InvalidInput) as invalid:
        access_bindings.create_binding(
            db, admin, access_bindings.CreateBinding(role_id=ids.new("role"), principal_id="prn_1")
        )
    assert [e.path for e in invalid.value.errors] == [("principal_id",)]
    with pytest.raises(errors.InvalidInput) as invalid:
        roles.create_role(db, admin, roles.CreateRole(name="r", permissions=["agent:read", "x:y"]))
    assert [e.path for e in invalid.value.errors] == [("permissions", 1)]


# -- atomicity ----------------------------------------------------------------------------------


def _broken_append(*args: Any, **kwargs: Any) -> str:
    raise RuntimeError("audit unavailable")


@pytest.mark.parametrize(
    ("call", "model"),
    [
        (
            lambda db, actor: roles.create_role(
                db, actor, roles.CreateRole(name="r", permissions=["agent:read"])
            ),
            models.Role,
        ),
        (
            lambda db, actor: principals.create_principal(
                db, actor, principals.CreatePrincipal(name="p", kind=iam_policy.PrincipalKind.HUMAN)
            ),
            models.Principal,
        ),
        (
            lambda db, actor: principals.mint_api_key(
                db, actor, principals.MintApiKey(principal_id=actor), pepper=PEPPER
            ),
            models.ApiKey,
        ),
        (
            lambda db, actor: restrictions.create_restriction(
                db, actor, restrictions.CreateRestriction(permission="agent:use")
            ),
            models.Restriction,
        ),
    ],
)
def test_a_failed_audit_write_rolls_the_change_back(
    db: Database,
    admin: str,
    monkeypatch: pytest.MonkeyPatch,
    call: Callable[[Database, str], Any],
    model: type[models.Base],
) -> None:
    before = count(db, model)
    audited = len(events(db))
    monkeypatch.setattr(audit, "append", _broken_append)
    with pytest.raises(RuntimeError):
        call(db, admin)
    monkeypatch.undo()
    assert count(db, model) == before
    assert len(events(db)) == audited


def test_a_failed_audit_write_keeps_the_binding_live(
    db: Database, admin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = someone(db)
    role = roles.create_role(db, admin, roles.CreateRole(name="r", permissions=["agent:read"]))
    binding = access_bindings.create_binding(
        db, admin, access_bindings.CreateBinding(role_id=role.id, principal_id=target)
    )
    monkeypatch.setattr(audit, "append", _broken_append)
    with pytest.raises(RuntimeError):
        access_bindings.revoke_binding(
            db, admin, access_bindings.RevokeBinding(binding_id=binding.id)
        )
    with pytest.raises(RuntimeError):
        roles.delete_role(db, admin, roles.DeleteRole(role_id=role.id))
    monkeypatch.undo()
    assert access_bindings.get_binding(db, actor_id=admin, binding_id=binding.id).revoked_at is None
    assert roles.get_role(db, actor_id=admin, role_id=role.id).deleted_at is None


# -- the last administrator ---------------------------------------------------------------------


def test_two_administrators_revoking_each_other_leave_one(
    db: Database, admin: str, boot: installation.BootstrapResult
) -> None:
    assert boot.binding_id is not None and boot.administrator_role_id is not None
    sign_in(db, admin)
    deputy = someone(db, name="deputy", signed_in=True)
    deputy_binding = access_bindings.create_binding(
        db,
        admin,
        access_bindings.CreateBinding(role_id=boot.administrator_role_id, principal_id=deputy),
    )
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def revoke(actor: str, binding_id: str) -> None:
        barrier.wait()
        try:
            outcomes[actor] = access_bindings.revoke_binding(
                db, actor, access_bindings.RevokeBinding(binding_id=binding_id)
            )
        except errors.OccError as error:
            outcomes[actor] = error

    threads = [
        threading.Thread(target=revoke, args=(admin, deputy_binding.id)),
        threading.Thread(target=revoke, args=(deputy, boot.binding_id)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    kinds = sorted(type(outcome).__name__ for outcome in outcomes.values())
    # one revocation wins; the other is refused (last administrator) or, when it ran second
    # and its actor was the one just revoked, denied
    assert kinds[0] == "AccessBinding" and kinds[1] in {"LastAdministrator", "Forbidden"}, outcomes
    with db.transaction() as session:
        live = iam_policy.list_bindings(session, role_id=boot.administrator_role_id)
    assert len(live) == 1


def test_a_disabled_principal_does_not_count_as_an_administrator(
    db: Database, admin: str, boot: installation.BootstrapResult
) -> None:
    assert boot.binding_id is not None
    sign_in(db, admin)
    deputy = someone(db, "installation:administer", name="deputy", signed_in=True)
    with db.transaction() as session:
        iam_policy.disable_principal(session, deputy)
    with pytest.raises(errors.LastAdministrator):
        access_bindings.revoke_binding(
            db, admin, access_bindings.RevokeBinding(binding_id=boot.binding_id)
        )


def test_restrictions_that_spare_an_administrator_are_accepted(db: Database, admin: str) -> None:
    sign_in(db, admin)
    deputy = someone(db, "installation:administer", name="deputy", signed_in=True)
    rule = restrictions.create_restriction(
        db,
        admin,
        restrictions.CreateRestriction(permission="installation:administer", principal_id=deputy),
    )
    assert rule.principal_id == deputy
    with pytest.raises(errors.Forbidden):
        roles.list_roles(db, actor_id=deputy)
    with pytest.raises(errors.LastAdministrator):
        restrictions.create_restriction(
            db,
            admin,
            restrictions.CreateRestriction(
                permission="installation:administer", principal_id=admin
            ),
        )
    # narrowed to a Namespace, an administer restriction never touches the Installation
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=admin)
    restrictions.create_restriction(
        db,
        admin,
        restrictions.CreateRestriction(
            permission="installation:administer", namespace_id=namespace_id
        ),
    )
    assert roles.list_roles(db, actor_id=admin)


# -- API keys and the bootstrap key -------------------------------------------------------------


def test_minted_keys_authenticate_until_revoked(db: Database, admin: str) -> None:
    sign_in(db, admin)  # the key revoked below is not the administrator's last
    minted = principals.mint_api_key(
        db, admin, principals.MintApiKey(principal_id=admin), pepper=PEPPER
    )
    assert minted.key not in repr(minted)
    assert authenticate(db, presented_key=minted.key, pepper=PEPPER) == admin
    with pytest.raises(errors.Unauthenticated):
        authenticate(db, presented_key=minted.key, pepper="another pepper")
    revoked = principals.revoke_api_key(
        db, admin, principals.RevokeApiKey(principal_id=admin, key_id=minted.id)
    )
    assert revoked.revoked_at is not None
    with pytest.raises(errors.Unauthenticated):
        authenticate(db, presented_key=minted.key, pepper=PEPPER)


def test_first_key_is_issued_once(db: Database, admin: str) -> None:
    first = principals.issue_first_key(db, principal_id=admin, pepper=PEPPER)
    assert first is not None and first.principal_id == admin
    assert principals.issue_first_key(db, principal_id=admin, pepper=PEPPER) is None
    assert authenticate(db, presented_key=first.key, pepper=PEPPER) == admin
    [event] = events(db, resource_id=first.id)
    assert (event.kind, event.action, event.actor_id) == ("bootstrap", "api_keys.create", admin)
    assert first.key not in str(event.details)
    with db.transaction() as session:
        api_keys.revoke(session, first.id)
    # a revoked key still counts: the bootstrap never mints a second one
    assert principals.issue_first_key(db, principal_id=admin, pepper=PEPPER) is None


def test_first_key_for_unknown_or_disabled_principals(db: Database, admin: str) -> None:
    assert principals.issue_first_key(db, principal_id=ids.new("principal"), pepper=PEPPER) is None
    with db.transaction() as session:
        iam_policy.disable_principal(session, admin)
    assert principals.issue_first_key(db, principal_id=admin, pepper=PEPPER) is None
    assert count(db, models.ApiKey) == 0
