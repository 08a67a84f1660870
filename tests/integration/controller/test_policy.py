"""The last-administrator guard on real PostgreSQL: only principals that can sign in (enabled,
with a live API key, a linked sign-in identity or a live session) count; a change that would
leave none is refused, audited, and changes nothing."""

from __future__ import annotations

import datetime as dt

import pytest

from occ.controller import access_bindings, installation, principals, roles, sign_in
from occ.foundation import errors
from occ.state import api_keys, audit, iam_policy
from occ.state.db import Database
from tests.support import rows

PEPPER = "policy-guard-pepper"
SESSIONS = sign_in.SessionPolicy(secret_key="g" * 40, lifetime=dt.timedelta(hours=1))


@pytest.fixture
def admin(db: Database, boot: installation.BootstrapResult) -> str:
    """The bootstrap administrator, signed in with one key."""
    assert boot.admin_principal_id is not None
    assert principals.issue_first_key(db, principal_id=boot.admin_principal_id, pepper=PEPPER)
    return boot.admin_principal_id


def administrator(
    db: Database,
    admin: str,
    boot: installation.BootstrapResult,
    name: str,
    *,
    kind: iam_policy.PrincipalKind,
) -> iam_policy.Principal:
    """A new principal ``admin`` binds to the administrator Role (without a key)."""
    assert boot.administrator_role_id is not None
    made = principals.create_principal(db, admin, principals.CreatePrincipal(name=name, kind=kind))
    access_bindings.create_binding(
        db,
        admin,
        access_bindings.CreateBinding(role_id=boot.administrator_role_id, principal_id=made.id),
    )
    return made


def keys_of(db: Database, principal_id: str) -> list[api_keys.ApiKey]:
    with db.transaction() as session:
        return api_keys.list_for(session, principal_id)


def refusals(db: Database) -> list[audit.AuditEvent]:
    with db.transaction() as session:
        return [
            event
            for event in audit.list_events(session, kind=audit.EventKind.AUTHORIZATION_DENIAL)
            if event.details.get("code") == "LAST_ADMINISTRATOR"
        ]


def test_a_keyless_administrator_does_not_keep_the_installation_administered(
    db: Database, admin: str, boot: installation.BootstrapResult
) -> None:
    # the sequence that used to lock the administrator out: bind the administrator Role to a
    # new service principal that has no key, then delete one's own binding
    assert boot.administrator_role_id is not None and boot.binding_id is not None
    robot = administrator(db, admin, boot, "robot", kind=iam_policy.PrincipalKind.SERVICE)
    with pytest.raises(errors.LastAdministrator) as refused:
        access_bindings.revoke_binding(
            db, admin, access_bindings.RevokeBinding(binding_id=boot.binding_id)
        )
    assert refused.value.code == "LAST_ADMINISTRATOR"
    binding = access_bindings.get_binding(db, actor_id=admin, binding_id=boot.binding_id)
    assert binding.revoked_at is None
    [event] = refusals(db)
    assert (event.action, event.actor_id, event.outcome) == (
        "access_bindings.revoke",
        admin,
        audit.EventOutcome.DENIED,
    )
    assert event.resource_kind == "installation"
    assert event.details["reason"] == "last_administrator"
    assert event.details["request"] == {"bindingId": boot.binding_id}

    # once the robot can sign in, it is an administrator that can act: the revocation passes
    principals.mint_api_key(db, admin, principals.MintApiKey(principal_id=robot.id), pepper=PEPPER)
    revoked = access_bindings.revoke_binding(
        db, admin, access_bindings.RevokeBinding(binding_id=boot.binding_id)
    )
    assert revoked.revoked_at is not None


def test_the_last_key_of_the_last_acting_administrator_stays(
    db: Database, admin: str, boot: installation.BootstrapResult
) -> None:
    assert boot.administrator_role_id is not None
    administrator(db, admin, boot, "keyless", kind=iam_policy.PrincipalKind.HUMAN)
    [only] = keys_of(db, admin)
    with pytest.raises(errors.LastAdministrator):
        principals.revoke_api_key(
            db, admin, principals.RevokeApiKey(principal_id=admin, key_id=only.id)
        )
    assert [key.revoked_at for key in keys_of(db, admin)] == [None]
    assert [event.action for event in refusals(db)] == ["api_keys.revoke"]

    # with a second key the first may go; a repeat of a revoked key changes nothing
    principals.mint_api_key(db, admin, principals.MintApiKey(principal_id=admin), pepper=PEPPER)
    assert principals.revoke_api_key(
        db, admin, principals.RevokeApiKey(principal_id=admin, key_id=only.id)
    ).revoked_at
    assert principals.revoke_api_key(
        db, admin, principals.RevokeApiKey(principal_id=admin, key_id=only.id)
    ).revoked_at


def test_the_last_acting_administrator_cannot_be_disabled(db: Database, admin: str) -> None:
    with pytest.raises(errors.LastAdministrator):
        principals.disable_principal(db, admin, principals.DisablePrincipal(principal_id=admin))
    assert not principals.get_principal(db, actor_id=admin, principal_id=admin).disabled
    assert [key.revoked_at for key in keys_of(db, admin)] == [None]
    assert [event.action for event in refusals(db)] == ["principals.disable"]


def test_disabling_a_principal_revokes_its_keys_and_is_audited(
    db: Database, admin: str, boot: installation.BootstrapResult
) -> None:
    assert boot.administrator_role_id is not None and boot.binding_id is not None
    deputy = administrator(db, admin, boot, "deputy", kind=iam_policy.PrincipalKind.HUMAN)
    key = principals.mint_api_key(
        db, admin, principals.MintApiKey(principal_id=deputy.id), pepper=PEPPER
    )
    disabled = principals.disable_principal(
        db, admin, principals.DisablePrincipal(principal_id=deputy.id)
    )
    assert disabled.disabled
    assert [k.revoked_at is not None for k in keys_of(db, deputy.id)] == [True]
    again = principals.disable_principal(
        db, admin, principals.DisablePrincipal(principal_id=deputy.id)
    )
    assert again.disabled_at == disabled.disabled_at
    with db.transaction() as session:
        [event] = [
            e
            for e in audit.list_events(session, resource_id=deputy.id)
            if e.action == "principals.disable"
        ]
    assert event.details["revokedKeyIds"] == [key.id]
    assert event.details["reason"] == "requested"
    # the disabled deputy no longer counts: the admin's own binding must stay
    with pytest.raises(errors.LastAdministrator):
        access_bindings.revoke_binding(
            db, admin, access_bindings.RevokeBinding(binding_id=boot.binding_id)
        )


def test_an_agent_principal_is_not_disabled_on_its_own(db: Database, admin: str) -> None:
    with db.transaction() as session:
        namespace_id = rows.namespace(session, created_by=admin, status="ready")
        agent_id = rows.agent(session, namespace_id=namespace_id)
        [agent_principal] = [
            p for p in iam_policy.list_principals(session) if p.agent_id == agent_id
        ]
    with pytest.raises(errors.Conflict) as refused:
        principals.disable_principal(
            db, admin, principals.DisablePrincipal(principal_id=agent_principal.id)
        )
    assert not isinstance(refused.value, errors.LastAdministrator)
    assert not principals.get_principal(
        db, actor_id=admin, principal_id=agent_principal.id
    ).disabled


def test_deleting_the_only_administrator_role_is_refused(
    db: Database, admin: str, boot: installation.BootstrapResult
) -> None:
    assert boot.administrator_role_id is not None
    with pytest.raises(errors.LastAdministrator):
        roles.delete_role(db, admin, roles.DeleteRole(role_id=boot.administrator_role_id))
    assert roles.get_role(db, actor_id=admin, role_id=boot.administrator_role_id).deleted_at is None


def bind_administrator(
    db: Database, admin: str, boot: installation.BootstrapResult, principal_id: str
) -> str:
    assert boot.administrator_role_id is not None
    return access_bindings.create_binding(
        db,
        admin,
        access_bindings.CreateBinding(
            role_id=boot.administrator_role_id, principal_id=principal_id
        ),
    ).id


def test_a_person_who_signs_in_through_a_provider_is_an_administrator_that_can_act(
    db: Database, admin: str, boot: installation.BootstrapResult
) -> None:
    assert boot.binding_id is not None
    started = sign_in.sign_in(
        db,
        sign_in.SignIn(issuer="https://id.example.com", subject="ada", display_name="Ada"),
        SESSIONS,
    )
    person = started.session.principal_id
    own_binding = bind_administrator(db, admin, boot, person)
    sign_in.sign_out(db, token=started.token, secret_key=SESSIONS.secret_key)

    # the key holder may step down: the person, without a key or a live session, can sign in
    # again through the provider
    access_bindings.revoke_binding(
        db, admin, access_bindings.RevokeBinding(binding_id=boot.binding_id)
    )
    principals.disable_principal(db, person, principals.DisablePrincipal(principal_id=admin))

    # now the person is the last administrator of any kind: neither their binding nor they go
    with pytest.raises(errors.LastAdministrator):
        access_bindings.revoke_binding(
            db, person, access_bindings.RevokeBinding(binding_id=own_binding)
        )
    with pytest.raises(errors.LastAdministrator):
        principals.disable_principal(db, person, principals.DisablePrincipal(principal_id=person))
    assert not principals.get_principal(db, actor_id=person, principal_id=person).disabled
    assert sorted(event.action for event in refusals(db)) == [
        "access_bindings.revoke",
        "principals.disable",
    ]


def test_a_live_session_counts_and_an_ended_one_does_not(
    db: Database, admin: str, boot: installation.BootstrapResult
) -> None:
    assert boot.binding_id is not None
    linked = administrator(db, admin, boot, "linked", kind=iam_policy.PrincipalKind.HUMAN)
    revoke_own = access_bindings.RevokeBinding(binding_id=boot.binding_id)
    with pytest.raises(errors.LastAdministrator):  # no key, no identity, no session
        access_bindings.revoke_binding(db, admin, revoke_own)

    token = sign_in.issue_one_time_link(
        db, principal_id=linked.id, secret_key=SESSIONS.secret_key, lifetime=dt.timedelta(hours=1)
    )
    started = sign_in.redeem_one_time_link(db, token, SESSIONS)
    sign_in.sign_out(db, token=started.token, secret_key=SESSIONS.secret_key)
    with pytest.raises(errors.LastAdministrator):  # its only session has ended
        access_bindings.revoke_binding(db, admin, revoke_own)

    sign_in.redeem_one_time_link(
        db,
        sign_in.issue_one_time_link(
            db,
            principal_id=linked.id,
            secret_key=SESSIONS.secret_key,
            lifetime=dt.timedelta(hours=1),
        ),
        SESSIONS,
    )
    assert access_bindings.revoke_binding(db, admin, revoke_own).revoked_at is not None
