"""A fake Kubernetes API server for tests: real HTTP on 127.0.0.1 for the real client.

``FakeKubeAPI`` serves the kinds the Kubernetes Compute Driver uses with the apiserver's
semantics (versions, conflicts, validation, server-side apply, deletion, selectors) plus
test hooks; ``Request`` is one journal entry. See ``docs/testing-kubernetes.md``.
"""

from __future__ import annotations

from tests.support.kube_api.fake import FakeKubeAPI
from tests.support.kube_api.faults import Request
from tests.support.kube_api.verbs import ValidationFailure

__all__ = ["FakeKubeAPI", "Request", "ValidationFailure"]
