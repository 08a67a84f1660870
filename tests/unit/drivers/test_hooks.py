"""The lifecycle hook dispatcher: order, reverse teardown, compensation, launch environment.

The hooks here are recording test doubles of the plug-in interface; the
dispatcher under test is the real one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from occ.drivers.compute import base, hooks, launch
from tests.support import specs

NAMESPACE = base.NamespaceSpec(id="ns_1", name="team")
DOCUMENT: dict[str, Any] = {"model": "gpt", "tools": ["a", "b"], "nested": {"x": 1}}
REVISION = specs.revision(configuration_generation=4, configuration_document=DOCUMENT)


@dataclass
class Call:
    hook: str
    phase: str
    aborted: bool
    operation: base.Operation


@dataclass
class RecordingHook:
    """Records every call under its ``label``; ``fail`` maps a phase to the exception it raises
    there. Its identity is the label when that names a capability, else ``iam:<label>``."""

    label: str
    calls: list[Call]
    environment: dict[str, str] = field(default_factory=dict)
    fail: dict[str, Exception] = field(default_factory=dict)
    during: dict[str, Callable[[base.Operation, Any], None]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.label if ":" in self.label else f"iam:{self.label}"

    def _record(self, phase: str, operation: base.Operation, subject: Any) -> None:
        self.calls.append(Call(self.label, phase, operation.abort.is_set(), operation))
        if phase in self.during:
            self.during[phase](operation, subject)
        if phase in self.fail:
            raise self.fail[phase]

    def after_namespace_prepared(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        self._record("after_namespace_prepared", operation, namespace)

    def before_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec, launch: hooks.LaunchSpec
    ) -> None:
        launch.environment.update(self.environment)
        self._record("before_workload_start", operation, revision)

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        self._record("before_workload_stop", operation, revision)

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        self._record("before_namespace_delete", operation, namespace)


def _operation(*, aborted: bool = False) -> base.Operation:
    event = threading.Event()
    if aborted:
        event.set()
    return base.Operation(work_id="work_1", claim_token="token_1", abort=event)


def _hooks(
    calls: list[Call],
    *names: str,
    environment: dict[str, dict[str, str]] | None = None,
    during: dict[str, dict[str, Callable[[base.Operation, Any], None]]] | None = None,
    fail: dict[str, dict[str, Exception]] | None = None,
) -> list[RecordingHook]:
    """Recording hooks ``names`` in selection order; ``environment``, ``during`` and ``fail``
    map a hook's name to what it contributes, does in a phase and raises in a phase."""
    return [
        RecordingHook(
            name,
            calls,
            environment=(environment or {}).get(name, {}),
            fail=(fail or {}).get(name, {}),
            during=(during or {}).get(name, {}),
        )
        for name in names
    ]


def _trace(calls: list[Call]) -> list[tuple[str, str]]:
    return [(call.hook, call.phase) for call in calls]


def test_recording_hook_satisfies_the_protocol() -> None:
    assert isinstance(RecordingHook("config:a", []), hooks.LifecycleHooks)


SELECTION = ("configuration:a", "sandbox:b", "iam:c")
THREE = ("a", "b", "c")
"""Three hooks where the names do not matter, in selection order."""
SUBJECTS: dict[str, base.NamespaceSpec | base.RevisionSpec] = {
    "after_namespace_prepared": NAMESPACE,
    "before_workload_start": REVISION,
    "before_workload_stop": REVISION,
    "before_namespace_delete": NAMESPACE,
}


@pytest.mark.parametrize(
    ("phases", "order"),
    [
        pytest.param(
            ("after_namespace_prepared", "before_workload_start"), SELECTION, id="preparation"
        ),
        pytest.param(
            ("before_workload_stop", "before_namespace_delete"), SELECTION[::-1], id="teardown"
        ),
    ],
)
def test_preparation_runs_in_selection_order_and_teardown_in_reverse(
    phases: tuple[str, str], order: tuple[str, ...]
) -> None:
    calls: list[Call] = []
    dispatcher = hooks.HookDispatcher(_hooks(calls, *SELECTION))
    for phase in phases:
        getattr(dispatcher, phase)(_operation(), SUBJECTS[phase])
    assert _trace(calls) == [(hook, phase) for phase in phases for hook in order]


def test_hooks_receive_the_operation_of_the_call() -> None:
    calls: list[Call] = []
    operation = _operation()
    hooks.HookDispatcher(_hooks(calls, "a")).before_workload_stop(operation, REVISION)
    seen = calls[0].operation
    assert seen.abort is operation.abort and seen.work_id == operation.work_id
    assert seen.claim_token == ""  # the fencing token is deployment authority: never an owner's


def _compensated(phase: str, compensation: str) -> list[tuple[str, str]]:
    """The trace when ``iam:c``, last of SELECTION, fails ``phase``: all three ran it, then the
    two before it ran ``compensation`` in reverse."""
    return [(hook, phase) for hook in SELECTION] + [
        (hook, compensation) for hook in reversed(SELECTION[:2])
    ]


def test_failed_namespace_preparation_compensates_completed_hooks_in_reverse() -> None:
    calls: list[Call] = []
    owners = _hooks(
        calls,
        *SELECTION,
        "secret:d",
        fail={"iam:c": {"after_namespace_prepared": RuntimeError("boom")}},
    )
    with pytest.raises(base.TransientDriverError) as raised:
        hooks.HookDispatcher(owners).after_namespace_prepared(_operation(), NAMESPACE)
    assert _trace(calls) == _compensated("after_namespace_prepared", "before_namespace_delete")
    assert raised.value.code == hooks.HOOK_FAILED
    assert "hook failed for iam:c" in raised.value.reason
    assert "boom" not in str(raised.value)  # an arbitrary exception's message is not echoed


def test_failed_workload_start_compensates_with_workload_stop_in_reverse() -> None:
    calls: list[Call] = []
    refusal = base.PermanentDriverError("SANDBOX_REFUSED", "no capacity class")
    owners = _hooks(calls, *SELECTION, fail={"iam:c": {"before_workload_start": refusal}})
    with pytest.raises(base.PermanentDriverError) as raised:
        hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert _trace(calls) == _compensated("before_workload_start", "before_workload_stop")
    assert raised.value.code == "SANDBOX_REFUSED"
    assert raised.value.reason == (
        "hook failed for iam:c in before_workload_start: no capacity class"
    )


def test_a_transient_hook_failure_stays_transient_with_its_code() -> None:
    calls: list[Call] = []
    owners = _hooks(
        calls,
        "a",
        fail={"a": {"before_workload_start": base.TransientDriverError("IAM_UNREACHABLE")}},
    )
    with pytest.raises(base.TransientDriverError) as raised:
        hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert raised.value.code == "IAM_UNREACHABLE"
    assert "hook failed for iam:a" in raised.value.reason


def test_the_first_hook_failing_needs_no_compensation() -> None:
    calls: list[Call] = []
    owners = _hooks(calls, "a", "b", fail={"a": {"after_namespace_prepared": RuntimeError()}})
    with pytest.raises(base.TransientDriverError):
        hooks.HookDispatcher(owners).after_namespace_prepared(_operation(), NAMESPACE)
    assert _trace(calls) == [("a", "after_namespace_prepared")]


def test_a_failing_compensation_does_not_hide_the_original_failure() -> None:
    calls: list[Call] = []
    owners = _hooks(
        calls,
        *THREE,
        fail={
            "b": {"before_workload_stop": RuntimeError("cleanup broke")},
            "c": {"before_workload_start": base.PermanentDriverError("REFUSED")},
        },
    )
    with pytest.raises(base.PermanentDriverError) as raised:
        hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert raised.value.code == "REFUSED"
    # b's compensation failed; a is compensated all the same.
    assert _trace(calls)[-2:] == [("b", "before_workload_stop"), ("a", "before_workload_stop")]


def test_a_teardown_failure_stops_the_teardown() -> None:
    calls: list[Call] = []
    owners = _hooks(
        calls,
        *THREE,
        fail={"b": {"before_workload_stop": base.TransientDriverError("REVOCATION_PENDING")}},
    )
    with pytest.raises(base.TransientDriverError) as raised:
        hooks.HookDispatcher(owners).before_workload_stop(_operation(), REVISION)
    assert _trace(calls) == [("c", "before_workload_stop"), ("b", "before_workload_stop")]
    assert raised.value.code == "REVOCATION_PENDING"
    assert "hook failed for iam:b in before_workload_stop" in raised.value.reason


def test_a_namespace_delete_failure_stops_the_teardown() -> None:
    calls: list[Call] = []
    owners = _hooks(
        calls,
        "a",
        "b",
        fail={"b": {"before_namespace_delete": base.PermanentDriverError("FOREIGN_OBJECTS")}},
    )
    with pytest.raises(base.PermanentDriverError):
        hooks.HookDispatcher(owners).before_namespace_delete(_operation(), NAMESPACE)
    assert _trace(calls) == [("b", "before_namespace_delete")]


def test_compensation_uses_the_operation_while_it_is_not_aborted() -> None:
    calls: list[Call] = []
    operation = _operation()
    owners = _hooks(calls, "a", "b", fail={"b": {"before_workload_start": RuntimeError()}})
    with pytest.raises(base.TransientDriverError):
        hooks.HookDispatcher(owners).before_workload_start(operation, REVISION)
    assert calls[-1].phase == "before_workload_stop"
    assert calls[-1].operation.abort is operation.abort


def test_compensation_of_an_aborted_operation_gets_a_fresh_deadline() -> None:
    calls: list[Call] = []
    operation = _operation()

    def abort_then_notice(op: base.Operation, _subject: object) -> None:
        operation.abort.set()  # the claim is lost while b runs
        op.check()

    owners = _hooks(calls, "a", "b", during={"b": {"before_workload_start": abort_then_notice}})
    dispatcher = hooks.HookDispatcher(owners, compensation_timeout_s=0.3)
    with pytest.raises(base.Aborted):
        dispatcher.before_workload_start(operation, REVISION)
    compensation = calls[-1]
    assert (compensation.hook, compensation.phase) == ("a", "before_workload_stop")
    assert compensation.operation.abort is not operation.abort
    assert not compensation.aborted  # a fresh signal: cleanup still gets its chance
    assert compensation.operation.work_id == operation.work_id
    assert compensation.operation.claim_token == ""
    # ...which ends with the compensation: a hook that kept it sees it aborted.
    assert compensation.operation.abort.is_set()


def test_the_compensation_deadline_bounds_a_hanging_cleanup() -> None:
    calls: list[Call] = []

    def hang(op: base.Operation, _subject: object) -> None:
        op.wait(30)

    owners = _hooks(
        calls,
        *THREE,
        during={"b": {"before_workload_stop": hang}},
        fail={"c": {"before_workload_start": base.PermanentDriverError("REFUSED")}},
    )
    dispatcher = hooks.HookDispatcher(owners, compensation_timeout_s=0.05)
    started = time.monotonic()
    with pytest.raises(base.PermanentDriverError):
        dispatcher.before_workload_start(_operation(aborted=True), REVISION)
    assert time.monotonic() - started < 5
    # b's cleanup was cut off by the deadline; a was still called (with the expired signal).
    assert _trace(calls)[-2:] == [("b", "before_workload_stop"), ("a", "before_workload_stop")]
    assert calls[-1].aborted


def test_compensate_workload_start_undoes_every_hook_in_reverse() -> None:
    calls: list[Call] = []
    owners = _hooks(calls, "a", "b", fail={"b": {"before_workload_stop": RuntimeError()}})
    hooks.HookDispatcher(owners).compensate_workload_start(_operation(aborted=True), REVISION)
    assert _trace(calls) == [("b", "before_workload_stop"), ("a", "before_workload_stop")]
    assert not any(call.aborted for call in calls)


# -- frozen inputs ---------------------------------------------------------------------------


def test_hooks_receive_deep_frozen_copies() -> None:
    seen: list[base.RevisionSpec] = []
    calls: list[Call] = []

    def mutate(_op: base.Operation, revision: base.RevisionSpec) -> None:
        seen.append(revision)
        with pytest.raises(TypeError):
            revision.configuration_document["model"] = "other"  # type: ignore[index]  # refused: read-only
        with pytest.raises(TypeError):
            revision.configuration_document["nested"]["x"] = 2
        with pytest.raises(AttributeError):
            revision.configuration_document["tools"].append("c")

    owners = _hooks(calls, "a", during={"a": {"before_workload_start": mutate}})
    hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert seen[0].configuration_document["tools"] == ("a", "b")
    assert DOCUMENT == {"model": "gpt", "tools": ["a", "b"], "nested": {"x": 1}}


def test_the_hook_list_is_fixed_at_construction() -> None:
    calls: list[Call] = []
    owners = _hooks(calls, "a")
    dispatcher = hooks.HookDispatcher(owners)
    owners.append(RecordingHook("late", calls))
    dispatcher.before_workload_stop(_operation(), REVISION)
    assert _trace(calls) == [("a", "before_workload_stop")]


# -- launch environment ----------------------------------------------------------------------


def test_hooks_contribute_placeholders_and_see_earlier_entries() -> None:
    calls: list[Call] = []
    seen: list[dict[str, str]] = []
    owners = _hooks(
        calls,
        "a",
        "b",
        environment={
            "a": {"CONFIG_REF": "opaque-cfg_1.v2"},
            "b": {"SANDBOX_TOKEN": "opaque-sandbox:token-7"},
        },
    )
    original = owners[1].before_workload_start

    def capture(
        operation: base.Operation, revision: base.RevisionSpec, launch: hooks.LaunchSpec
    ) -> None:
        seen.append(dict(launch.environment))
        original(operation, revision, launch)

    owners[1].before_workload_start = capture  # type: ignore[method-assign]  # spied on
    environment = hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert seen == [{"CONFIG_REF": "opaque-cfg_1.v2"}]
    assert dict(environment) == {
        "CONFIG_REF": "opaque-cfg_1.v2",
        "SANDBOX_TOKEN": "opaque-sandbox:token-7",
    }
    with pytest.raises(TypeError):
        environment["OTHER"] = "opaque-x"  # type: ignore[index]  # refused: read-only


def test_no_hooks_means_an_empty_environment() -> None:
    assert dict(hooks.HookDispatcher().before_workload_start(_operation(), REVISION)) == {}
    assert not hooks.HookDispatcher()


SECRET = "sk-live-1234567890abcdef"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("lower_case", "opaque-x"),
        ("1LEADING_DIGIT", "opaque-x"),
        ("HAS-DASH", "opaque-x"),
        ("", "opaque-x"),
        ("A" * 129, "opaque-x"),
        ("HOME", "opaque-x"),
        ("PATH", "opaque-x"),
        ("TMPDIR", "opaque-x"),
        ("CODEX_HOME", "opaque-x"),
        ("NODE_OPTIONS", "opaque-x"),
        ("NODE_PATH", "opaque-x"),
        ("BASH_ENV", "opaque-x"),
        ("ENV", "opaque-x"),
        ("LOG_FORMAT", "opaque-x"),
        ("RUST_LOG", "opaque-x"),
        ("XDG_CONFIG_HOME", "opaque-x"),
        ("OPENCLAW_GATEWAY_TOKEN", "opaque-x"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "opaque-x"),
        ("LD_PRELOAD", "opaque-x"),
        ("DYLD_INSERT_LIBRARIES", "opaque-x"),
        ("API_KEY", SECRET),
        ("API_KEY", "opaque-"),
        ("API_KEY", "opaque-.starts-with-dot"),
        ("API_KEY", "opaque-has space"),
        ("API_KEY", "OPAQUE-upper"),
        ("API_KEY", "prefix-opaque-x"),
        ("API_KEY", "opaque-" + "a" * 129),
        ("API_KEY", "opaque-x\n"),
    ],
)
def test_refused_entries_fail_permanently_and_compensate(name: str, value: str) -> None:
    calls: list[Call] = []
    owners = _hooks(calls, "a", "sandbox:b", "c", environment={"sandbox:b": {name: value}})
    with pytest.raises(base.PermanentDriverError) as raised:
        hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert raised.value.code == hooks.ENVIRONMENT_INVALID
    assert "sandbox:b" in raised.value.reason
    assert SECRET not in raised.value.reason  # a refused value is never quoted
    # The offender's hook completed: it is compensated too, then a; c never ran.
    assert _trace(calls) == [
        ("a", "before_workload_start"),
        ("sandbox:b", "before_workload_start"),
        ("sandbox:b", "before_workload_stop"),
        ("a", "before_workload_stop"),
    ]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("A", "opaque-a"),
        ("_UNDERSCORE", "opaque-0"),
        ("A" * 128, "opaque-" + "z" * 128),
        ("HOMEDIR", "opaque-x"),  # reserved names are exact, only the listed prefixes are prefixes
        ("MY_LD_PATH", "opaque-a.b_c:d-e"),
        ("PATHS", "opaque-x"),
    ],
)
def test_accepted_entries(name: str, value: str) -> None:
    owners = _hooks([], "a", environment={"a": {name: value}})
    environment = hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert environment == {name: value}


def test_at_most_64_entries_across_all_hooks() -> None:
    first = {f"FIRST_{index}": "opaque-x" for index in range(40)}
    second = {f"SECOND_{index}": "opaque-x" for index in range(24)}
    owners = _hooks([], "a", "b", environment={"a": first, "b": second})
    assert len(hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)) == 64
    calls: list[Call] = []
    owners = _hooks(
        calls, "a", "b", environment={"a": first, "b": {**second, "ONE_MORE": "opaque-x"}}
    )
    with pytest.raises(base.PermanentDriverError) as raised:
        hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert "65" in raised.value.reason
    assert _trace(calls)[-2:] == [("b", "before_workload_stop"), ("a", "before_workload_stop")]


def test_a_hook_may_not_change_an_earlier_entry() -> None:
    owners = _hooks(
        [], "a", "b", environment={"a": {"TOKEN": "opaque-a"}, "b": {"TOKEN": "opaque-b"}}
    )
    with pytest.raises(base.PermanentDriverError) as raised:
        hooks.HookDispatcher(owners).before_workload_start(_operation(), REVISION)
    assert raised.value.code == hooks.ENVIRONMENT_INVALID
    assert "hook iam:b" in raised.value.reason


def test_validate_environment() -> None:
    launch.validate_environment({"TOKEN": "opaque-1"})
    with pytest.raises(base.PermanentDriverError):
        launch.validate_environment({"TOKEN": SECRET})
    assert launch.is_reserved("XDG_RUNTIME_DIR")
    assert not launch.is_reserved("MY_XDG")


# -- registration and what owners never see ------------------------------------------------


@pytest.mark.parametrize("name", ["compute:docker", "iam", "iam:", "IAM:a", "plugin:x", 7])
def test_an_owner_without_a_hook_capability_identity_is_refused(name: object) -> None:
    owner = RecordingHook("iam:a", [])
    with pytest.raises(hooks.OwnerInvalid):
        hooks.register(type("Named", (), {"name": name, **_callbacks(owner)})())


def _callbacks(owner: RecordingHook) -> dict[str, Any]:
    return {stage: staticmethod(getattr(owner, stage)) for stage in hooks.STAGES}


def test_an_owner_missing_a_stage_is_refused_naming_it() -> None:
    owner = RecordingHook("sandbox:a", [])
    callbacks = _callbacks(owner)
    del callbacks["before_workload_stop"]
    with pytest.raises(hooks.OwnerInvalid) as raised:
        hooks.HookDispatcher([type("Partial", (), {"name": "sandbox:a", **callbacks})()])
    assert "sandbox:a lacks before_workload_stop" in str(raised.value)


def test_an_owner_selected_twice_is_refused() -> None:
    calls: list[Call] = []
    with pytest.raises(hooks.OwnerInvalid):
        hooks.HookDispatcher(_hooks(calls, "iam:a", "iam:a"))


def test_callbacks_are_captured_at_registration() -> None:
    calls: list[Call] = []
    (owner,) = _hooks(calls, "iam:a")
    dispatcher = hooks.HookDispatcher([owner])
    owner.before_workload_stop = lambda *_: calls.append(  # type: ignore[method-assign]  # swapped
        Call("swapped", "before_workload_stop", False, _operation())
    )
    dispatcher.before_workload_stop(_operation(), REVISION)
    assert _trace(calls) == [("iam:a", "before_workload_stop")]
    assert dispatcher.owners == ("iam:a",)


def test_owners_never_receive_the_credential_nor_the_claim_token() -> None:
    seen: list[tuple[base.Operation, object]] = []
    calls: list[Call] = []
    secret = "sk-live-do-not-share"
    revision = specs.revision(credential=base.Credential(secret, "test-fingerprint-key"))

    def look(operation: base.Operation, subject: object) -> None:
        seen.append((operation, subject))

    phases: dict[str, Callable[[base.Operation, Any], None]] = {s: look for s in hooks.STAGES}
    owners = _hooks(calls, "iam:a", during={"iam:a": phases}, environment={"iam:a": {}})
    dispatcher = hooks.HookDispatcher(owners)
    operation = _operation()
    dispatcher.after_namespace_prepared(operation, NAMESPACE)
    dispatcher.before_workload_start(operation, revision)
    dispatcher.before_workload_stop(operation, revision)
    dispatcher.compensate_workload_start(operation, revision)
    dispatcher.before_namespace_delete(operation, NAMESPACE)
    assert len(seen) == 5
    for owner_operation, subject in seen:
        assert owner_operation.claim_token == ""
        if isinstance(subject, base.RevisionSpec):
            assert subject.credential is None
        assert secret not in repr(subject) and operation.claim_token not in repr(owner_operation)
    assert revision.credential is not None  # the Compute Driver's own spec keeps it
