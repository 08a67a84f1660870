"""``pass_report``: phases add up inside a recording, the driver's answer keeps its code, HTTP
status and Kubernetes Status reason, and outside a recording nothing is kept."""

from __future__ import annotations

from occ.drivers.compute import base
from occ.drivers.compute.kubernetes import failures
from occ.reconcile import pass_report


def test_phases_add_up_and_the_driver_answer_is_the_cause() -> None:
    refused = failures.translated(
        "patch deployment", 409, '{"kind":"Status","reason":"Conflict"}', None
    )
    with pass_report.recording() as report:
        with pass_report.phase("prepare"):
            pass
        with pass_report.phase("prepare"):
            pass
        with pass_report.phase("activation"):
            pass
        pass_report.driver_answer(refused.code, refused)

    assert report.prepare_s > 0 and report.activation_s > 0
    assert set(report.timing_fields()) == {"prepareMs", "activationMs"}
    assert report.cause_fields() == {
        "cause": failures.CONFLICT,
        "dependency": "compute",
        "status": 409,
        "statusReason": "Conflict",
    }


def test_an_observation_without_http_has_no_status() -> None:
    with pass_report.recording() as report:
        pass_report.driver_answer("ROLLOUT_PROGRESS_DEADLINE_EXCEEDED")
        pass_report.driver_answer(None)  # nothing said: the last cause stays
    assert report.cause_fields() == {
        "cause": "ROLLOUT_PROGRESS_DEADLINE_EXCEEDED",
        "dependency": "compute",
    }


def test_outside_a_recording_nothing_is_kept() -> None:
    with pass_report.phase("prepare"):
        pass
    pass_report.driver_answer("X", base.TransientDriverError("X"))
    with pass_report.recording() as report:
        pass
    assert report.cause_fields() == {} and report.prepare_s == 0


def test_the_runtime_failure_is_a_drivers_code_not_occs_own_not_ready_yet() -> None:
    with pass_report.recording():
        assert pass_report.runtime_failure() is None
        pass_report.driver_answer("REVISION_INCOMPLETE")
        assert pass_report.runtime_failure() is None  # only "not ready yet"
        pass_report.driver_answer("GATEWAY_CRASH_LOOP")
        assert pass_report.runtime_failure() == "GATEWAY_CRASH_LOOP"
    assert pass_report.runtime_failure() is None
