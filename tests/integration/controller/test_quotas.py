"""Namespace quotas on real PostgreSQL: concurrent creates never pass a quota together, a
refusal writes nothing, and an administrator's override (audited) wins over the default."""

from __future__ import annotations

import functools
import threading
from concurrent import futures

import pytest

from occ.controller import configurations, quotas, secrets
from occ.foundation import errors
from occ.state import models, secret_store
from occ.state import quotas as quota_rows
from occ.state.db import Database
from tests.integration.controller.support import count, events
from tests.integration.controller.test_agents import World, create, make_world

CONCURRENT = 8
_SET = "namespaces.set_quotas"
DEFAULTS = quota_rows.Counts(agents=2, revisions_per_agent=3, secrets=2, configurations=3)


def _create_agent(db: Database, admin: str, world: World, name: str) -> str:
    return create(db, admin, world, name=name, empower=False, quota_defaults=DEFAULTS).id


def _actions(db: Database, namespace_id: str, action: str) -> list[str]:
    return [e.action for e in events(db, namespace_id=namespace_id) if e.action == action]


def test_concurrent_agent_creates_never_pass_the_quota_together(db: Database, admin: str) -> None:
    world = make_world(db, admin)
    start = threading.Barrier(CONCURRENT)

    def create(n: int) -> str:
        start.wait(timeout=30)
        return _create_agent(db, admin, world, f"agent-{n}")

    with futures.ThreadPoolExecutor(CONCURRENT) as pool:
        attempts = [pool.submit(create, n) for n in range(CONCURRENT)]
        outcomes = [attempt.exception(timeout=60) or attempt.result() for attempt in attempts]
    created = [outcome for outcome in outcomes if isinstance(outcome, str)]
    refused = [outcome for outcome in outcomes if isinstance(outcome, errors.QuotaExceeded)]
    assert len(created) == DEFAULTS.agents
    assert len(refused) == CONCURRENT - len(created), outcomes
    assert count(db, models.Agent) == DEFAULTS.agents
    assert {(e.quota, e.limit, e.usage) for e in refused} == {("agents", 2, 2)}
    # a refusal wrote nothing: no service principal, no audit event beyond the two creates
    assert len(_actions(db, world.namespace_id, "agents.create")) == DEFAULTS.agents


def test_an_override_wins_over_the_default_and_is_audited(db: Database, admin: str) -> None:
    world = make_world(db, admin)  # one Secret and one Configuration already
    create_second_secret = functools.partial(
        secrets.create_secret,
        db,
        admin,
        secrets.CreateSecret(namespace_id=world.namespace_id, name="two", value="v"),
        store=secret_store.SecretStore("quota-test-key"),
        quota_defaults=DEFAULTS,
    )
    command = quotas.SetQuotas(namespace_id=world.namespace_id, limits={"secrets": 1})
    set_to = quotas.set_quotas(db, admin, command, defaults=DEFAULTS)
    assert set_to.secrets == quotas.Quota(limit=1, used=1, overridden=True)
    assert set_to.configurations == quotas.Quota(limit=3, used=1, overridden=False)
    with pytest.raises(errors.QuotaExceeded) as refused:
        create_second_secret()
    assert (refused.value.quota, refused.value.limit, refused.value.usage) == ("secrets", 1, 1)
    assert "v" not in str(refused.value)
    assert count(db, models.Secret) == 1
    [event] = [e for e in events(db, resource_id=world.namespace_id) if e.action == _SET]
    assert event.details["quotas"]["secrets"] == 1
    assert event.details["previousQuotas"]["secrets"] is None
    # null returns the quota to the default, which admits a second Secret
    command = quotas.SetQuotas(namespace_id=world.namespace_id, limits={"secrets": None})
    assert quotas.set_quotas(db, admin, command, defaults=DEFAULTS).secrets.limit == 2
    create_second_secret()
    configurations.create_configuration(
        db,
        admin,
        configurations.CreateConfiguration(
            namespace_id=world.namespace_id, name="second", document={}
        ),
        quota_defaults=DEFAULTS,
    )
    read = quotas.get_quotas(db, admin, namespace_id=world.namespace_id, defaults=DEFAULTS)
    assert (read.secrets.used, read.configurations.used, read.agents.used) == (2, 2, 0)


def test_a_limit_out_of_range_is_refused_naming_the_quota(db: Database, admin: str) -> None:
    world = make_world(db, admin)
    for limits in ({"agents": -1}, {"secrets": quotas.LIMIT_MAX + 1}, {"widgets": 1}):
        with pytest.raises(errors.InvalidInput):
            quotas.set_quotas(
                db,
                admin,
                quotas.SetQuotas(namespace_id=world.namespace_id, limits=limits),
                defaults=DEFAULTS,
            )
    assert _actions(db, world.namespace_id, _SET) == []
