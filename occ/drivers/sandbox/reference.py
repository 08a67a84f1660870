"""The reference Sandbox Driver: pins an egress allow-list and a read-only workspace.

An example to copy rather than a confinement mechanism: it writes the policy into the
revision's document (``transform``, at deploy admission) and, at every workload start, checks
that the revision carries exactly that policy and contributes two opaque placeholders naming
it (``SANDBOX_PROFILE``, ``SANDBOX_WORKSPACE``). A Compute Driver or runtime that
enforces sandboxes reads those placeholders; the stand-in gateway only carries them. A revision
admitted without the policy, or with another one, is refused before it starts
(``SANDBOX_POLICY_MISSING``): a sandbox fails closed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from occ.drivers.compute import base, hooks

DRIVER_ID: Final = "reference"

SECTION: Final = "sandbox"
"""The document key the policy is pinned under (whatever the Configuration held there goes)."""

POLICY_MISSING: Final = "SANDBOX_POLICY_MISSING"

_LABEL: Final = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOST: Final = re.compile(rf"(\*\.)?{_LABEL}(\.{_LABEL})*")


class ReferenceSandbox:
    """Pins ``{"egress": {"allow": hosts}, "workspace": {"readOnly": true}}`` in every revision."""

    capability: Final = "sandbox"
    id: Final = DRIVER_ID
    name: Final = f"sandbox:{DRIVER_ID}"

    def __init__(self, egress_allow: Iterable[str] = ()) -> None:
        """``egress_allow``: host names (``*.`` may lead) the runtime may reach; ``ValueError``
        for anything else. Empty: no egress at all."""
        hosts = sorted(set(egress_allow))
        for host in hosts:
            if not isinstance(host, str) or len(host) > 253 or not _HOST.fullmatch(host):
                raise ValueError("sandbox egress hosts must be lower-case DNS names")
        self.policy: Mapping[str, Any] = {
            "driver": DRIVER_ID,
            "egress": {"allow": hosts},
            "workspace": {"readOnly": True},
        }
        self.profile = "opaque-sandbox:" + _digest(self.policy)

    # -- deploy admission ---------------------------------------------------------------

    def transform(self, document: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``document`` with the policy pinned under ``sandbox``."""
        transformed = copy.deepcopy(dict(document))
        transformed[SECTION] = copy.deepcopy(dict(self.policy))
        return transformed

    # -- lifecycle hooks ----------------------------------------------------------------

    def after_namespace_prepared(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """Nothing to prepare per Namespace."""

    def before_workload_start(
        self, operation: base.Operation, revision: base.RevisionSpec, launch: hooks.LaunchSpec
    ) -> None:
        """Refuse a revision without this policy; contribute the placeholders naming it."""
        pinned = revision.configuration_document.get(SECTION)
        if not isinstance(pinned, Mapping) or _digest(pinned) != _digest(self.policy):
            raise base.PermanentDriverError(
                POLICY_MISSING,
                "the revision was not admitted under this sandbox's policy; deploy it again",
            )
        launch.environment["SANDBOX_PROFILE"] = self.profile
        launch.environment["SANDBOX_WORKSPACE"] = "opaque-workspace:read-only"

    def before_workload_stop(self, operation: base.Operation, revision: base.RevisionSpec) -> None:
        """Nothing is held per workload: the policy lives in the revision."""

    def before_namespace_delete(
        self, operation: base.Operation, namespace: base.NamespaceSpec
    ) -> None:
        """Nothing is held per Namespace."""


def _digest(policy: Mapping[str, Any]) -> str:
    text = json.dumps(policy, sort_keys=True, separators=(",", ":"), default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):  # a frozen copy's mappings are read-only views
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(type(value).__name__)
