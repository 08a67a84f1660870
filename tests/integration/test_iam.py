"""authorize() against real policy rows: scopes, restrictions, Namespace-scoped and disabled
principals, revoked bindings and deleted roles."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from occ import iam
from occ.foundation import errors, ids
from occ.state import iam_policy
from occ.state import restrictions as restriction_rows
from occ.state import roles as role_rows
from occ.state.db import Database
from tests.support import grants, rows


@dataclass(frozen=True)
class World:
    alice: str
    ns_a: str
    ns_b: str
    installation: iam.Resource


@pytest.fixture
def world(db: Database) -> World:
    with db.transaction() as session:
        owner = rows.principal(session, name="owner")
        return World(
            alice=rows.principal(session, name="alice"),
            ns_a=rows.namespace(session, created_by=owner, name="a"),
            ns_b=rows.namespace(session, created_by=owner, name="b"),
            installation=iam.Resource.installation(ids.new("installation")),
        )


def agent(namespace_id: str) -> iam.Resource:
    return iam.Resource("agent", ids.new("agent"), namespace_id)


def decide(
    db: Database, principal_id: str, permission: str, resource: iam.Resource
) -> iam.Decision:
    with db.transaction() as session:
        return iam.authorize(session, principal_id, permission, resource)


def _grant_alice_namespace_read(
    db: Database, world: World, resource: iam.Resource
) -> iam_policy.AccessBinding:
    """Bind alice to a Role granting ``namespace:read``, and see that it grants it on
    ``resource``; the binding."""
    with db.transaction() as session:
        binding = grants.grant(session, world.alice, ["namespace:read"])
    assert decide(db, world.alice, "namespace:read", resource).allowed
    return binding


def test_installation_wide_binding_grants_everywhere(db: Database, world: World) -> None:
    with db.transaction() as session:
        binding = grants.grant(session, world.alice, ["namespace:read", "namespace:create"])

    for namespace_id in (world.ns_a, world.ns_b):
        decision = decide(db, world.alice, "namespace:read", iam.Resource.namespace(namespace_id))
        assert decision.allowed
        assert decision.reason is iam.Reason.ALLOWED
        assert decision.evidence == iam.Evidence(world.alice, (binding.id,), (binding.role_id,))
    assert decide(db, world.alice, "namespace:create", world.installation).allowed
    denied = decide(db, world.alice, "namespace:delete", iam.Resource.namespace(world.ns_a))
    assert not denied.allowed
    assert denied.reason is iam.Reason.NO_MATCHING_BINDING
    assert denied.evidence == iam.Evidence(world.alice)


def test_namespace_binding_grants_only_in_its_namespace(db: Database, world: World) -> None:
    grants.give(
        db,
        world.alice,
        ["namespace:read", "agent:read", "namespace:create"],
        namespace_id=world.ns_a,
    )

    assert decide(db, world.alice, "namespace:read", iam.Resource.namespace(world.ns_a)).allowed
    assert decide(db, world.alice, "agent:read", agent(world.ns_a)).allowed
    assert not decide(db, world.alice, "namespace:read", iam.Resource.namespace(world.ns_b)).allowed
    assert not decide(db, world.alice, "agent:read", agent(world.ns_b)).allowed
    # a Namespace binding never reaches the Installation (namespace creation)
    assert not decide(db, world.alice, "namespace:create", world.installation).allowed


def test_exact_resource_binding_grants_only_that_resource(db: Database, world: World) -> None:
    mine, other = agent(world.ns_a), agent(world.ns_a)
    with db.transaction() as session:
        only_mine = grants.exactly(world.ns_a, "agent", mine.id)
        binding = grants.grant(session, world.alice, ["agent:read", "agent:deploy"], **only_mine)

    decision = decide(db, world.alice, "agent:deploy", mine)
    assert decision.allowed
    assert decision.evidence.binding_ids == (binding.id,)
    assert not decide(db, world.alice, "agent:read", other).allowed
    # same id under another kind does not match the filter
    assert not decide(
        db, world.alice, "agent_revision:read", iam.Resource("agent_revision", mine.id, world.ns_a)
    ).allowed
    assert not decide(db, world.alice, "namespace:read", iam.Resource.namespace(world.ns_a)).allowed


def test_exact_installation_binding(db: Database, world: World) -> None:
    only_this_one = grants.exactly(None, "installation", world.installation.id)
    grants.give(db, world.alice, ["installation:read"], **only_this_one)

    assert decide(db, world.alice, "installation:read", world.installation).allowed
    assert not decide(
        db, world.alice, "installation:read", iam.Resource.installation(ids.new("installation"))
    ).allowed


def test_namespace_role_grants_only_in_its_namespace(db: Database, world: World) -> None:
    with db.transaction() as session:
        grants.grant(
            session,
            world.alice,
            ["agent:read"],
            namespace_id=world.ns_a,
            role_namespace_id=world.ns_a,
        )
        role = role_rows.create_role(
            session, name="readers", permissions=["agent:read"], namespace_id=world.ns_a
        )

    assert decide(db, world.alice, "agent:read", agent(world.ns_a)).allowed
    assert not decide(db, world.alice, "agent:read", agent(world.ns_b)).allowed
    with pytest.raises(errors.InvalidInput) as raised, db.transaction() as session:
        iam_policy.bind(
            session,
            role_id=role.id,
            principal_id=world.alice,
            created_by=world.alice,
            namespace_id=world.ns_b,
        )
    assert raised.value.errors[0].path == ("role_id",)


def test_restriction_beats_every_grant(db: Database, world: World) -> None:
    with db.transaction() as session:
        grants.grant(session, world.alice, ["agent:read", "agent:deploy"])
        grants.grant(session, world.alice, ["agent:read"], namespace_id=world.ns_a)
        restriction = restriction_rows.insert(
            session, permission="agent:read", created_by=world.alice, namespace_id=world.ns_a
        )

    in_a = agent(world.ns_a)
    decision = decide(db, world.alice, "agent:read", in_a)
    assert not decision.allowed
    assert decision.reason is iam.Reason.RESTRICTED
    assert decision.evidence.restriction_ids == (restriction.id,)
    assert len(decision.evidence.binding_ids) == 2
    assert list(decision.evidence.binding_ids) == sorted(decision.evidence.binding_ids)
    assert decide(db, world.alice, "agent:deploy", in_a).allowed  # other permission
    assert decide(db, world.alice, "agent:read", agent(world.ns_b)).allowed  # other Namespace

    with db.transaction() as session:
        assert restriction_rows.delete(session, restriction.id)
        assert not restriction_rows.delete(session, restriction.id)
    assert decide(db, world.alice, "agent:read", in_a).allowed


def test_restriction_on_one_resource_only(db: Database, world: World) -> None:
    target, neighbour = agent(world.ns_a), agent(world.ns_a)
    with db.transaction() as session:
        grants.grant(session, world.alice, ["agent:deploy"], namespace_id=world.ns_a)
        restriction = restriction_rows.insert(
            session,
            permission="agent:deploy",
            created_by=world.alice,
            namespace_id=world.ns_a,
            resource_id=target.id,
        )

    denied = decide(db, world.alice, "agent:deploy", target)
    assert (denied.allowed, denied.reason) == (False, iam.Reason.RESTRICTED)
    assert denied.evidence.restriction_ids == (restriction.id,)
    assert decide(db, world.alice, "agent:deploy", neighbour).allowed


def test_restriction_for_another_principal_does_not_apply(db: Database, world: World) -> None:
    with db.transaction() as session:
        bob = rows.principal(session, name="bob")
        grants.grant(session, world.alice, ["namespace:create"])
        grants.grant(session, bob, ["namespace:create"])
        restriction_rows.insert(
            session, permission="namespace:create", created_by=world.alice, principal_id=bob
        )

    assert decide(db, world.alice, "namespace:create", world.installation).allowed
    bobs = decide(db, bob, "namespace:create", world.installation)
    assert (bobs.allowed, bobs.reason) == (False, iam.Reason.RESTRICTED)


def test_namespace_scoped_principal_never_acts_outside(db: Database, world: World) -> None:
    with db.transaction() as session:
        robot = iam_policy.create_principal(
            session, name="robot", kind="service", namespace_id=world.ns_a
        )
        grants.grant(session, robot.id, ["namespace:read", "namespace:create", "agent:read"])

    assert decide(db, robot.id, "namespace:read", iam.Resource.namespace(world.ns_a)).allowed
    assert decide(db, robot.id, "agent:read", agent(world.ns_a)).allowed
    for permission, resource in [
        ("namespace:read", iam.Resource.namespace(world.ns_b)),
        ("agent:read", agent(world.ns_b)),
        ("namespace:create", world.installation),
    ]:
        decision = decide(db, robot.id, permission, resource)
        assert not decision.allowed
        assert decision.reason is iam.Reason.OUTSIDE_PRINCIPAL_NAMESPACE
        assert not decision.actor_revoked


def test_disabled_and_unknown_principals_are_revoked_actors(db: Database, world: World) -> None:
    resource = iam.Resource.namespace(world.ns_a)
    _grant_alice_namespace_read(db, world, resource)

    with db.transaction() as session:
        disabled = iam_policy.disable_principal(session, world.alice)
        assert disabled is not None and disabled.disabled
        again = iam_policy.disable_principal(session, world.alice)
        assert again is not None and again.disabled_at == disabled.disabled_at

    decision = decide(db, world.alice, "namespace:read", resource)
    assert (decision.allowed, decision.reason) == (False, iam.Reason.PRINCIPAL_DISABLED)
    assert decision.actor_revoked
    missing = decide(db, ids.new("principal"), "namespace:read", resource)
    assert (missing.allowed, missing.reason) == (False, iam.Reason.PRINCIPAL_NOT_FOUND)
    assert missing.actor_revoked
    assert missing.evidence == iam.Evidence()


def test_revoked_binding_stops_granting(db: Database, world: World) -> None:
    resource = iam.Resource.namespace(world.ns_a)
    binding = _grant_alice_namespace_read(db, world, resource)

    with db.transaction() as session:
        revoked = iam_policy.revoke_binding(session, binding.id)
        assert revoked is not None and revoked.revoked_at is not None
        assert iam_policy.list_bindings(session, principal_id=world.alice) == []

    decision = decide(db, world.alice, "namespace:read", resource)
    assert (decision.allowed, decision.reason) == (False, iam.Reason.NO_MATCHING_BINDING)
    assert not decision.actor_revoked


def test_deleted_role_stops_granting(db: Database, world: World) -> None:
    resource = iam.Resource.namespace(world.ns_a)
    binding = _grant_alice_namespace_read(db, world, resource)

    with db.transaction() as session:
        role = role_rows.get_role(session, binding.role_id)  # loaded before the delete
        assert role is not None and role.deleted_at is None
        deleted = role_rows.delete_role(session, binding.role_id)
        assert deleted is not None and deleted.deleted_at is not None
        # the binding row stays; a deleted role cannot be bound again
        with pytest.raises(errors.NotFound):
            iam_policy.bind(
                session, role_id=binding.role_id, principal_id=world.alice, created_by=world.alice
            )

    assert not decide(db, world.alice, "namespace:read", resource).allowed


def test_require_raises_forbidden_with_the_decision(db: Database, world: World) -> None:
    with pytest.raises(errors.Forbidden) as raised, db.transaction() as session:
        iam.require(session, world.alice, "namespace:create", world.installation)
    assert isinstance(raised.value.decision, iam.Decision)
    assert raised.value.decision.reason is iam.Reason.NO_MATCHING_BINDING


def test_unknown_permission_is_denied(db: Database, world: World) -> None:
    grants.give(db, world.alice, iam.ADMINISTRATOR_PERMISSIONS)
    decision = decide(db, world.alice, "namespace:administer", iam.Resource.namespace(world.ns_a))
    assert (decision.allowed, decision.reason) == (False, iam.Reason.UNKNOWN_PERMISSION)


def test_authorize_each_matches_authorize(db: Database, world: World) -> None:
    target = agent(world.ns_a)
    with db.transaction() as session:
        grants.grant(session, world.alice, ["agent:read"], namespace_id=world.ns_a)
        only_target = grants.exactly(world.ns_b, "agent", target.id)
        grants.grant(session, world.alice, ["agent:read"], **only_target)
        restriction_rows.insert(
            session, permission="agent:read", created_by=world.alice, resource_id=target.id
        )
    candidates = [
        target,
        agent(world.ns_a),
        agent(world.ns_b),
        iam.Resource("agent", target.id, world.ns_b),
    ]
    with db.transaction() as session:
        each = iam.authorize_each(session, world.alice, "agent:read", candidates)
        one_by_one = [
            iam.authorize(session, world.alice, "agent:read", resource) for resource in candidates
        ]
    assert each == one_by_one
    assert [decision.allowed for decision in each] == [False, True, False, False]


def test_preloaded_policies_decide_as_one_load_each(db: Database, world: World) -> None:
    with db.transaction() as session:
        bob = rows.principal(session, name="bob")
        grants.grant(session, world.alice, ["agent:read"], namespace_id=world.ns_a)
        grants.grant(session, bob, ["agent:deploy"], namespace_id=world.ns_a)
        restriction_rows.insert(
            session, permission="agent:deploy", created_by=world.alice, principal_id=bob
        )
    unknown = ids.new("principal")
    principals = (world.alice, bob, unknown)
    checks = [
        (principal_id, permission, agent(world.ns_a))
        for principal_id in principals
        for permission in ("agent:read", "agent:deploy")
    ]
    with db.transaction() as session:
        policies = iam.PolicyCache()
        policies.preload(session, principals, world.ns_a)
        policies.preload(session, principals, world.ns_a)  # loaded already: no query
        preloaded = [iam.authorize(session, *check, policies=policies) for check in checks]
        assert policies.loads == 1
        one_by_one = [iam.authorize(session, *check) for check in checks]
    assert preloaded == one_by_one
    # alice reads; bob's grant is restricted; the unknown principal is a revoked actor
    assert [decision.allowed for decision in preloaded] == [True, False, False, False] + [False] * 2


def test_resource_shapes_are_checked() -> None:
    with pytest.raises(ValueError, match="own id"):
        iam.Resource("namespace", ids.new("namespace"), None)
    with pytest.raises(ValueError, match="needs its namespace_id"):
        iam.Resource("agent", ids.new("agent"), None)
    with pytest.raises(ValueError, match="no Namespace"):
        iam.Resource("installation", ids.new("installation"), ids.new("namespace"))
    with pytest.raises(ValueError, match="unknown resource kind"):
        iam.Resource("preset", "x", "y")


def test_check_permissions() -> None:
    assert iam.check_permissions(["agent:read", "agent:read", "agent:deploy"]) == (
        "agent:deploy",
        "agent:read",
    )
    with pytest.raises(errors.InvalidInput) as raised:
        iam.check_permissions(["agent:read", "agent:fly"])
    assert raised.value.errors[0].path == ("permissions", 1)
    with pytest.raises(errors.InvalidInput):
        iam.check_permissions([])
    with pytest.raises(errors.InvalidInput):
        iam.check_permissions(["namespace:delete"], namespace_scoped=True)
    assert "agent:read_logs" in iam.ADMINISTRATOR_PERMISSIONS
    assert "agent:use" not in iam.ADMINISTRATOR_PERMISSIONS
    assert len(iam.ADMINISTRATOR_PERMISSIONS) == len(iam.PERMISSIONS) - 1


def test_permission_table_is_exactly_what_the_database_allows(db: Database) -> None:
    with db.transaction() as session:
        source = session.execute(
            sa.text("SELECT prosrc FROM pg_proc WHERE proname = 'permissions_are_valid'")
        ).scalar_one()
        role = role_rows.create_role(session, name="everything", permissions=iam.PERMISSIONS)
    assert set(re.findall(r"'([a-z_]+:[a-z_]+)'", source)) == set(iam.PERMISSIONS)
    assert set(role.permissions) == set(iam.PERMISSIONS)
    with pytest.raises(sa_exc.IntegrityError), db.transaction() as session:
        role_rows.create_role(session, name="bogus", permissions=["agent:fly"])


def test_duplicate_live_role_name_conflicts(db: Database) -> None:
    with db.transaction() as session:
        first = role_rows.create_role(session, name="ops", permissions=["agent:read"])
    with pytest.raises(errors.Conflict), db.transaction() as session:
        role_rows.create_role(session, name="ops", permissions=["agent:read"])
    with db.transaction() as session:
        role_rows.delete_role(session, first.id)
        second = role_rows.create_role(session, name="ops", permissions=["agent:deploy"])
        assert role_rows.find_role(session, name="ops") == second
        assert [role.id for role in role_rows.list_roles(session)] == [second.id]


def test_binding_scope_is_checked(db: Database, world: World) -> None:
    with db.transaction() as session:
        role = role_rows.create_role(session, name="r", permissions=["agent:read"])
    cases: list[tuple[dict[str, str], tuple[str]]] = [
        ({"resource_kind": "agent"}, ("resource_id",)),
        ({"resource_kind": "agent", "resource_id": ids.new("agent")}, ("namespace_id",)),
        (
            {"resource_kind": "preset", "resource_id": "x", "namespace_id": world.ns_a},
            ("resource_kind",),
        ),
        (
            {
                "resource_kind": "installation",
                "resource_id": ids.new("installation"),
                "namespace_id": world.ns_a,
            },
            ("namespace_id",),
        ),
        (
            {"resource_kind": "namespace", "resource_id": world.ns_b, "namespace_id": world.ns_a},
            ("resource_id",),
        ),
    ]
    for scope, path in cases:
        with pytest.raises(errors.InvalidInput) as raised, db.transaction() as session:
            iam_policy.bind(
                session, role_id=role.id, principal_id=world.alice, created_by=world.alice, **scope
            )
        assert raised.value.errors[0].path == path
    with pytest.raises(errors.NotFound), db.transaction() as session:
        iam_policy.bind(
            session, role_id=role.id, principal_id=ids.new("principal"), created_by=world.alice
        )
