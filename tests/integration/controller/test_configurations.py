"""Configuration and Secret admission on real PostgreSQL: one transaction per mutation,
generation compare-and-set, denials, Namespace readiness, references, and the sealed value."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from occ.controller import configurations, namespaces, secrets
from occ.foundation import errors, ids
from occ.state import audit, models, secret_store
from occ.state import configurations as configuration_rows
from occ.state import namespaces as namespace_rows
from occ.state import secrets as secret_rows
from occ.state.db import Database
from tests.integration.controller.support import count, events
from tests.support import audits, namespace_status, rows
from tests.support.grants import exactly, principal

STORE = secret_store.SecretStore("admission-test-key")
VALUE = "sk-admission-\u00e9-do-not-leak"


def ready_namespace(db: Database, owner_db: Database, admin: str, name: str) -> str:
    namespace_id = namespaces.create_namespace(db, admin, namespaces.CreateNamespace(name=name)).id
    namespace_status.set_status(owner_db, namespace_id)
    return namespace_id


@pytest.fixture
def namespace_id(db: Database, owner_db: Database, admin: str) -> str:
    return ready_namespace(db, owner_db, admin, "team-a")


def create(
    db: Database,
    admin: str,
    namespace_id: str,
    name: str = "base",
    document: dict[str, Any] | None = None,
) -> configuration_rows.Configuration:
    return configurations.create_configuration(
        db,
        admin,
        configurations.CreateConfiguration(
            namespace_id=namespace_id,
            name=name,
            document={"model": "gpt"} if document is None else document,
        ),
    )


def create_secret(
    db: Database, actor_id: str, namespace_id: str, name: str, value: str = VALUE
) -> secret_rows.Secret:
    return secrets.create_secret(
        db,
        actor_id,
        secrets.CreateSecret(namespace_id=namespace_id, name=name, value=value),
        store=STORE,
    )


class Unusable:
    """A database that fails the test if a use case opens a transaction."""

    def transaction(self) -> Any:
        raise AssertionError("queried the database")

    snapshot = transaction


def _update(
    db: Database, actor_id: str, namespace_id: str, configuration_id: str, **changes: Any
) -> configuration_rows.Configuration:
    """Update the Configuration as ``actor_id`` with ``changes`` (a name, a document)."""
    return configurations.update_configuration(
        db,
        actor_id,
        configurations.UpdateConfiguration(
            namespace_id=namespace_id, configuration_id=configuration_id, **changes
        ),
    )


def _delete(
    db: Database, actor_id: str, namespace_id: str, configuration_id: str
) -> configuration_rows.Configuration:
    """Delete the Configuration as ``actor_id``; what the use case returns."""
    return configurations.delete_configuration(
        db,
        actor_id,
        configurations.DeleteConfiguration(
            namespace_id=namespace_id, configuration_id=configuration_id
        ),
    )


# -- configurations: create ---------------------------------------------------------------------


def test_create_writes_the_row_and_its_audit_together(
    db: Database, admin: str, namespace_id: str
) -> None:
    view = create(db, admin, namespace_id, document={"model": "gpt", "tools": [1, {"a": None}]})

    assert ids.is_valid("configuration", view.id)
    assert (view.namespace_id, view.name, view.generation) == (namespace_id, "base", 1)
    assert view.document == {"model": "gpt", "tools": [1, {"a": None}]}
    assert count(db, models.ControllerWork) == 1  # only the Namespace's own work
    [event] = events(db, resource_id=view.id)
    assert audits.headline(event) == ("mutation", "configurations.create", admin, "success")
    assert (event.namespace_id, event.resource_kind) == (namespace_id, "configuration")
    assert event.details["name"] == "base" and event.details["generation"] == 1
    assert event.details["authorization"]["principalId"] == admin
    assert (
        configurations.get_configuration(
            db, actor_id=admin, namespace_id=namespace_id, configuration_id=view.id
        )
        == view
    )


def test_create_is_atomic(
    db: Database, admin: str, namespace_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_append(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("audit insert failed")

    monkeypatch.setattr(audit, "append", broken_append)
    with pytest.raises(RuntimeError):
        create(db, admin, namespace_id)
    monkeypatch.undo()
    assert count(db, models.Configuration) == 0
    assert create(db, admin, namespace_id).name == "base"  # the name was not reserved


def refuses_content(db: Database, admin: str, namespace_id: str) -> None:
    """Neither a Configuration nor a Secret can be created in the Namespace: none exists."""
    with pytest.raises(errors.NamespaceNotReady):
        create(db, admin, namespace_id)
    with pytest.raises(errors.NamespaceNotReady):
        create_secret(db, admin, namespace_id, "s")
    assert count(db, models.Configuration) == 0 and count(db, models.Secret) == 0


@pytest.mark.parametrize("status", ["provisioning", "failed"])
def test_create_needs_a_ready_namespace(
    db: Database, owner_db: Database, admin: str, status: str
) -> None:
    namespace_id = namespaces.create_namespace(
        db, admin, namespaces.CreateNamespace(name="young")
    ).id
    namespace_status.set_status(owner_db, namespace_id, status)
    refuses_content(db, admin, namespace_id)
    assert [e.action for e in events(db, namespace_id=namespace_id)] == ["namespaces.create"]


def test_a_deleting_namespace_refuses_new_content(
    db: Database, admin: str, namespace_id: str
) -> None:
    assert (
        namespaces.delete_namespace(
            db, admin, namespaces.DeleteNamespace(namespace_id=namespace_id)
        ).status
        == "deleting"
    )
    refuses_content(db, admin, namespace_id)


def test_content_keeps_a_namespace_from_being_deleted(
    db: Database, admin: str, namespace_id: str
) -> None:
    view = create(db, admin, namespace_id)
    with pytest.raises(errors.NamespaceNotEmpty, match="1 configuration"):
        namespaces.delete_namespace(
            db, admin, namespaces.DeleteNamespace(namespace_id=namespace_id)
        )
    _delete(db, admin, namespace_id, view.id)
    assert (
        namespaces.delete_namespace(
            db, admin, namespaces.DeleteNamespace(namespace_id=namespace_id)
        ).status
        == "deleting"
    )


def race(**actions: Callable[[], object]) -> dict[str, object]:
    """Run ``actions`` at once, each in a thread behind one barrier; by name, what each
    returned or the occ error it raised."""
    barrier = threading.Barrier(len(actions))
    outcomes: dict[str, object] = {}

    def run(name: str, action: Callable[[], object]) -> None:
        barrier.wait()
        try:
            outcomes[name] = action()
        except errors.OccError as error:
            outcomes[name] = error

    threads = [threading.Thread(target=run, args=item) for item in actions.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


def test_create_racing_namespace_deletion_never_leaves_content_behind(
    db: Database, owner_db: Database, admin: str
) -> None:
    for round_number in range(8):
        namespace_id = ready_namespace(db, owner_db, admin, f"race-{round_number}")
        outcomes = race(
            create=functools.partial(create, db, admin, namespace_id),
            delete=functools.partial(
                namespaces.delete_namespace,
                db,
                admin,
                namespaces.DeleteNamespace(namespace_id=namespace_id),
            ),
        )
        created = isinstance(outcomes["create"], configuration_rows.Configuration)
        deleting = isinstance(outcomes["delete"], namespace_rows.Namespace)
        assert created != deleting, outcomes
        if created:
            assert isinstance(outcomes["delete"], errors.NamespaceNotEmpty)
        else:
            assert isinstance(outcomes["create"], errors.NamespaceNotReady)


@pytest.mark.parametrize("name", ["", " padded", "tab\there", "x" * 201])
def test_bad_names_point_at_the_field(
    db: Database, admin: str, namespace_id: str, name: str
) -> None:
    with pytest.raises(errors.InvalidInput) as raised:
        create(db, admin, namespace_id, name=name)
    assert [e.path for e in raised.value.errors] == [("name",)]
    with pytest.raises(errors.InvalidInput) as raised:
        create_secret(db, admin, namespace_id, name)
    assert [e.path for e in raised.value.errors] == [("name",)]


def test_a_document_too_large_points_at_the_field(
    db: Database, admin: str, namespace_id: str
) -> None:
    # what else makes a document bad (not an object, not plain JSON) the web layer refuses
    document = {"big": "x" * (64 * 1024)}
    with pytest.raises(errors.InvalidInput) as raised:
        configurations.create_configuration(
            db,
            admin,
            configurations.CreateConfiguration(
                namespace_id=namespace_id, name="base", document=document
            ),
        )
    assert [e.path for e in raised.value.errors] == [("document",)]
    assert count(db, models.Configuration) == 0


def test_the_largest_document_fits(db: Database, admin: str, namespace_id: str) -> None:
    overhead = len('{"big":""}')
    document = {"big": "x" * (64 * 1024 - overhead)}
    assert configurations.document_size(document, ("document",)) == 64 * 1024
    assert create(db, admin, namespace_id, document=document).document == document


def test_duplicate_names_conflict_per_namespace(
    db: Database, owner_db: Database, admin: str, namespace_id: str
) -> None:
    create(db, admin, namespace_id)
    with pytest.raises(errors.Conflict):
        create(db, admin, namespace_id)
    other = ready_namespace(db, owner_db, admin, "team-b")
    assert create(db, admin, other).name == "base"
    assert count(db, models.Configuration) == 2


# -- configurations: authorization --------------------------------------------------------------


def test_denied_create_writes_only_the_denial(db: Database, admin: str, namespace_id: str) -> None:
    stranger = principal(db)
    reader = principal(db, "namespace:read", namespace_id=namespace_id)
    before = len(events(db))

    with pytest.raises(errors.NotFound):
        create(db, stranger, namespace_id)
    with pytest.raises(errors.Forbidden):
        create(db, reader, namespace_id)

    assert count(db, models.Configuration) == 0
    denials = events(db, kind="authorization_denial")
    assert len(events(db)) == before + 2
    assert [(d.actor_id, d.action, d.resource_kind, d.resource_id) for d in denials] == [
        (reader, "configurations.create", "namespace", namespace_id),
        (stranger, "configurations.create", "namespace", namespace_id),
    ]
    assert denials[0].details["permission"] == "configuration:create"
    assert denials[0].details["request"] == {"name": "base"}


def test_a_principal_of_another_namespace_sees_nothing(
    db: Database, owner_db: Database, admin: str, namespace_id: str
) -> None:
    other = ready_namespace(db, owner_db, admin, "team-b")
    theirs = create(db, admin, other, name="theirs")
    ours = create(db, admin, namespace_id, name="ours")
    member = principal(
        db,
        "configuration:create",
        "configuration:read",
        "configuration:update",
        "configuration:delete",
        "namespace:read",
        namespace_id=namespace_id,
    )

    for attempt in (
        lambda: configurations.get_configuration(
            db, actor_id=member, namespace_id=other, configuration_id=theirs.id
        ),
        lambda: configurations.update_configuration(
            db,
            member,
            configurations.UpdateConfiguration(
                namespace_id=other, configuration_id=theirs.id, name="x"
            ),
        ),
        lambda: configurations.delete_configuration(
            db,
            member,
            configurations.DeleteConfiguration(namespace_id=other, configuration_id=theirs.id),
        ),
        lambda: configurations.list_configurations(db, actor_id=member, namespace_id=other),
        lambda: create(db, member, other, name="intruder"),
        # B's Configuration addressed through A's path does not exist in A
        lambda: configurations.get_configuration(
            db, actor_id=member, namespace_id=namespace_id, configuration_id=theirs.id
        ),
        lambda: configurations.delete_configuration(
            db,
            admin,
            configurations.DeleteConfiguration(
                namespace_id=namespace_id, configuration_id=theirs.id
            ),
        ),
    ):
        with pytest.raises(errors.NotFound):
            attempt()

    assert configurations.list_configurations(db, actor_id=member, namespace_id=namespace_id) == [
        ours
    ]
    assert (
        configurations.get_configuration(
            db, actor_id=admin, namespace_id=other, configuration_id=theirs.id
        )
        == theirs
    )
    # hidden denials are counted per principal, resource kind and minute: the read, update
    # and delete of the Configuration in one event, the list and create in the Namespace in
    # another (more when the attempts straddled a minute), each its minute's first denial's
    denied = events(db, kind="authorization_denial")
    counts: dict[str, int] = {}
    for event in denied:
        kind = str(event.resource_kind)
        counts[kind] = counts.get(kind, 0) + int(event.details["hiddenDenials"])
    assert counts == {"configuration": 3, "namespace": 2}
    assert {e.action for e in denied} <= {
        "configurations.read",
        "configurations.update",
        "configurations.delete",
        "configurations.list",
        "configurations.create",
    }
    assert {"configurations.read", "configurations.list"} <= {e.action for e in denied}


def test_lists_are_filtered_per_item(db: Database, admin: str, namespace_id: str) -> None:
    first = create(db, admin, namespace_id, name="first")
    create(db, admin, namespace_id, name="second")
    exact = principal(db, "configuration:read", **exactly(namespace_id, "configuration", first.id))
    namespace_reader = principal(db, "namespace:read", namespace_id=namespace_id)
    collection_reader = principal(db, "configuration:read", namespace_id=namespace_id)

    assert [
        v.name
        for v in configurations.list_configurations(db, actor_id=admin, namespace_id=namespace_id)
    ] == ["first", "second"]
    assert configurations.list_configurations(db, actor_id=exact, namespace_id=namespace_id) == [
        first
    ]
    assert (
        configurations.list_configurations(db, actor_id=namespace_reader, namespace_id=namespace_id)
        == []
    )
    assert (
        len(
            configurations.list_configurations(
                db, actor_id=collection_reader, namespace_id=namespace_id
            )
        )
        == 2
    )
    with pytest.raises(errors.NotFound):
        configurations.list_configurations(db, actor_id=principal(db), namespace_id=namespace_id)


def test_reader_may_not_update_or_delete(db: Database, admin: str, namespace_id: str) -> None:
    view = create(db, admin, namespace_id)
    reader = principal(db, "configuration:read", namespace_id=namespace_id)
    with pytest.raises(errors.Forbidden):
        _update(db, reader, namespace_id, view.id, document={})
    with pytest.raises(errors.Forbidden):
        _delete(db, reader, namespace_id, view.id)
    assert (
        configurations.get_configuration(
            db, actor_id=admin, namespace_id=namespace_id, configuration_id=view.id
        )
        == view
    )


@pytest.mark.parametrize(
    ("namespace_value", "configuration_value"),
    [
        ("not-an-id", None),
        ("ns_123", None),
        (None, "cfg_nope"),
        (None, "sec_" + "0" * 36),
    ],
)
def test_malformed_ids_are_not_found_before_any_query(
    namespace_value: str | None, configuration_value: str | None
) -> None:
    namespace_id = namespace_value or ids.new("namespace")
    configuration_id = configuration_value or ids.new("configuration")
    unusable: Any = Unusable()
    attempts: tuple[Callable[[], object], ...] = (
        lambda: configurations.get_configuration(
            unusable, actor_id="x", namespace_id=namespace_id, configuration_id=configuration_id
        ),
        lambda: configurations.update_configuration(
            unusable,
            "x",
            configurations.UpdateConfiguration(
                namespace_id=namespace_id, configuration_id=configuration_id, name="n"
            ),
        ),
        lambda: configurations.delete_configuration(
            unusable,
            "x",
            configurations.DeleteConfiguration(
                namespace_id=namespace_id, configuration_id=configuration_id
            ),
        ),
    )
    for attempt in attempts:
        with pytest.raises(errors.NotFound):
            attempt()
    if namespace_value is not None:
        with pytest.raises(errors.NotFound):
            configurations.list_configurations(unusable, actor_id="x", namespace_id=namespace_id)
        with pytest.raises(errors.NotFound):
            create(unusable, "x", namespace_id)
        with pytest.raises(errors.NotFound):
            secrets.list_secrets(unusable, actor_id="x", namespace_id=namespace_id)
    with pytest.raises(errors.NotFound):
        secrets.get_secret(
            unusable, actor_id="x", namespace_id=namespace_id, secret_id=configuration_id
        )


# -- configurations: update ---------------------------------------------------------------------


def test_every_update_moves_the_generation_by_one(
    db: Database, admin: str, namespace_id: str
) -> None:
    view = create(db, admin, namespace_id)
    renamed = _update(db, admin, namespace_id, view.id, name="renamed")
    assert (renamed.name, renamed.document, renamed.generation) == ("renamed", {"model": "gpt"}, 2)
    assert renamed.updated_at > view.updated_at and renamed.created_at == view.created_at
    replaced = _update(db, admin, namespace_id, view.id, document={"model": "other"})
    assert (replaced.name, replaced.document, replaced.generation) == (
        "renamed",
        {"model": "other"},
        3,
    )
    both = _update(db, admin, namespace_id, view.id, name="both", document={})
    assert (both.name, both.document, both.generation) == ("both", {}, 4)

    updates = [e for e in events(db, resource_id=view.id) if e.action == "configurations.update"]
    assert [
        (e.details["previousGeneration"], e.details["generation"], e.details["changed"])
        for e in reversed(updates)
    ] == [(1, 2, ["name"]), (2, 3, ["document"]), (3, 4, ["name", "document"])]
    assert updates[-1].details["previousName"] == "base"


def test_an_empty_update_is_invalid(db: Database, admin: str, namespace_id: str) -> None:
    view = create(db, admin, namespace_id)
    with pytest.raises(errors.InvalidInput) as raised:
        configurations.update_configuration(
            db,
            admin,
            configurations.UpdateConfiguration(namespace_id=namespace_id, configuration_id=view.id),
        )
    assert [e.path for e in raised.value.errors] == [()]


def test_renaming_onto_a_taken_name_conflicts(db: Database, admin: str, namespace_id: str) -> None:
    create(db, admin, namespace_id, name="taken")
    view = create(db, admin, namespace_id, name="mine")
    with pytest.raises(errors.Conflict):
        _update(db, admin, namespace_id, view.id, name="taken")
    current = configurations.get_configuration(
        db, actor_id=admin, namespace_id=namespace_id, configuration_id=view.id
    )
    assert (current.name, current.generation) == ("mine", 1)


def test_concurrent_updates_each_take_their_own_generation(
    db: Database, admin: str, namespace_id: str
) -> None:
    view = create(db, admin, namespace_id)
    writers = 8
    barrier = threading.Barrier(writers)
    results: list[int] = []
    failures: list[BaseException] = []

    def write(index: int) -> None:
        barrier.wait()
        try:
            results.append(
                configurations.update_configuration(
                    db,
                    admin,
                    configurations.UpdateConfiguration(
                        namespace_id=namespace_id,
                        configuration_id=view.id,
                        document={"writer": index},
                    ),
                ).generation
            )
        except BaseException as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    assert sorted(results) == list(range(2, writers + 2))
    final = configurations.get_configuration(
        db, actor_id=admin, namespace_id=namespace_id, configuration_id=view.id
    )
    assert final.generation == writers + 1


def test_update_needs_a_ready_namespace(
    db: Database, owner_db: Database, admin: str, namespace_id: str
) -> None:
    view = create(db, admin, namespace_id)
    namespace_status.set_status(owner_db, namespace_id, "failed")
    with pytest.raises(errors.NamespaceNotReady):
        _update(db, admin, namespace_id, view.id, name="later")
    # deletion stays possible, so the Namespace can still be emptied
    _delete(db, admin, namespace_id, view.id)
    assert count(db, models.Configuration) == 0


# -- configurations: delete ---------------------------------------------------------------------


def test_delete_removes_the_row_and_audits(db: Database, admin: str, namespace_id: str) -> None:
    view = create(db, admin, namespace_id)
    removed = _delete(db, admin, namespace_id, view.id)
    assert removed == view
    assert count(db, models.Configuration) == 0
    event = events(db, resource_id=view.id)[0]
    assert (event.action, event.details["name"]) == ("configurations.delete", "base")
    with pytest.raises(errors.NotFound):
        _delete(db, admin, namespace_id, view.id)


def test_a_configuration_used_by_an_agent_is_kept(
    db: Database, admin: str, namespace_id: str
) -> None:
    with db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=namespace_id)
        configuration_id = session.scalar(
            sa.select(models.Agent.configuration_id).where(models.Agent.id == agent_id)
        )
    assert configuration_id is not None
    before = len(events(db))
    with pytest.raises(errors.Conflict, match=agent_id) as raised:
        configurations.delete_configuration(
            db,
            admin,
            configurations.DeleteConfiguration(
                namespace_id=namespace_id, configuration_id=configuration_id
            ),
        )
    assert raised.value.code == "RESOURCE_CONFLICT"
    assert count(db, models.Configuration) == 1
    assert len(events(db)) == before


# -- secrets ------------------------------------------------------------------------------------


def test_a_secret_is_stored_sealed_for_its_row(
    db: Database, owner_db: Database, admin: str, namespace_id: str
) -> None:
    view = create_secret(db, admin, namespace_id, "token")
    assert ids.is_valid("secret", view.id)
    assert not hasattr(view, "value")
    with db.transaction() as session:
        sealed = secret_rows.sealed_value(session, namespace_id, view.id)
    assert sealed is not None and VALUE.encode() not in sealed
    assert STORE.decrypt(view.id, sealed) == VALUE
    with pytest.raises(secret_store.SecretUnreadable):
        secret_store.SecretStore("another-key").decrypt(view.id, sealed)

    [event] = events(db, resource_id=view.id)
    assert (event.action, event.details["name"]) == ("secrets.create", "token")
    with owner_db.transaction() as session:
        dumped = session.scalar(
            sa.text("SELECT string_agg(details::text, ' ') FROM occ.audit_events")
        )
    assert VALUE not in (dumped or "")


def test_a_ciphertext_copied_to_another_secret_does_not_decrypt(
    db: Database, owner_db: Database, admin: str, namespace_id: str
) -> None:
    first = create_secret(db, admin, namespace_id, "first")
    second = create_secret(db, admin, namespace_id, "second", "other value")
    with owner_db.transaction() as session:
        session.execute(
            sa.text(
                "UPDATE occ.secrets SET value_ciphertext = "
                "(SELECT value_ciphertext FROM occ.secrets"
                " WHERE id = :source) WHERE id = :target"
            ),
            {"source": first.id, "target": second.id},
        )
    with db.transaction() as session:
        moved = secret_rows.sealed_value(session, namespace_id, second.id)
    assert moved is not None
    with pytest.raises(secret_store.SecretUnreadable):
        STORE.decrypt(second.id, moved)


@pytest.mark.parametrize("value", ["", "x" * (64 * 1024 + 1), "\u00e9" * (32 * 1024 + 1)])
def test_bad_values_are_refused_without_repeating_them(
    db: Database, admin: str, namespace_id: str, value: str
) -> None:
    with pytest.raises(errors.InvalidInput) as raised:
        create_secret(db, admin, namespace_id, "s", value)
    assert [e.path for e in raised.value.errors] == [("value",)]
    if value:
        assert value not in raised.value.detail
    assert count(db, models.Secret) == 0


def test_secret_denials_never_carry_the_value(db: Database, admin: str, namespace_id: str) -> None:
    stranger = principal(db)
    with pytest.raises(errors.NotFound):
        create_secret(db, stranger, namespace_id, "s")
    [denial] = events(db, kind="authorization_denial")
    assert denial.details["request"] == {"name": "s"}
    assert VALUE not in repr(denial)
    assert count(db, models.Secret) == 0


def test_secret_reads_and_lists_are_authorized(
    db: Database, owner_db: Database, admin: str, namespace_id: str
) -> None:
    first = create_secret(db, admin, namespace_id, "first")
    create_secret(db, admin, namespace_id, "second")
    exact = principal(db, "secret:read", **exactly(namespace_id, "secret", first.id))
    assert secrets.list_secrets(db, actor_id=exact, namespace_id=namespace_id) == [first]
    assert (
        secrets.get_secret(db, actor_id=exact, namespace_id=namespace_id, secret_id=first.id)
        == first
    )
    other = ready_namespace(db, owner_db, admin, "team-b")
    with pytest.raises(errors.NotFound):
        secrets.get_secret(db, actor_id=admin, namespace_id=other, secret_id=first.id)
    with pytest.raises(errors.NotFound):
        secrets.list_secrets(db, actor_id=principal(db), namespace_id=namespace_id)
    assert secrets.list_secrets(db, actor_id=admin, namespace_id=other) == []


def test_a_secret_used_for_harness_auth_is_kept(
    db: Database, admin: str, namespace_id: str
) -> None:
    view = create_secret(db, admin, namespace_id, "auth")
    with db.transaction() as session:
        agent_id = rows.agent(session, namespace_id=namespace_id)
        session.execute(
            sa.update(models.Agent)
            .where(models.Agent.id == agent_id)
            .values(harness_auth_secret_id=view.id)
        )
    with pytest.raises(errors.Conflict, match=agent_id):
        secrets.delete_secret(
            db, admin, secrets.DeleteSecret(namespace_id=namespace_id, secret_id=view.id)
        )
    assert count(db, models.Secret) == 1

    with db.transaction() as session:
        session.execute(
            sa.update(models.Agent)
            .where(models.Agent.id == agent_id)
            .values(harness_auth_secret_id=None)
        )
    removed = secrets.delete_secret(
        db, admin, secrets.DeleteSecret(namespace_id=namespace_id, secret_id=view.id)
    )
    assert removed == view
    assert count(db, models.Secret) == 0
    assert events(db, resource_id=view.id)[0].action == "secrets.delete"
