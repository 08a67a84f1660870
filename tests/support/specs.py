"""Specs as a Compute Driver receives them, for the driver tests that need only a few fields,
and the log target of a revision a test started."""

from __future__ import annotations

from typing import Any

from occ.drivers.compute import base, runtime_logs


def revision(**fields: Any) -> base.RevisionSpec:
    """Revision 1 (generation 1, an empty document) of the embedded ``openclaw`` 1.0.0 Agent
    ``agt_1`` in ``ns_1``, without a credential; ``fields`` replace any of these."""
    defaults: dict[str, Any] = {
        "namespace_id": "ns_1",
        "agent_id": "agt_1",
        "revision_id": "rev_1",
        "revision_number": 1,
        "configuration_generation": 1,
        "configuration_document": {},
        "harness_id": "openclaw",
        "harness_version": "1.0.0",
        "harness_mode": "embedded",
        "service_principal_id": "prn_1",
    }
    return base.RevisionSpec(**{**defaults, **fields})


def credential(value: str | None) -> base.Credential | None:
    """A revision's credential of ``value`` under the tests' fingerprint key (none without)."""
    return None if value is None else base.Credential(value, "test-fingerprint-key")


def log_target(spec: base.RevisionSpec) -> runtime_logs.LogTarget:
    """Where a log reader finds the output of the revision ``spec`` started."""
    return runtime_logs.LogTarget(
        namespace_id=spec.namespace_id,
        agent_id=spec.agent_id,
        revision_id=spec.revision_id,
        harness_mode=spec.harness_mode,
    )
