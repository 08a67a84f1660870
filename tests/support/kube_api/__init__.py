"""A fake Kubernetes API server for tests: real HTTP on 127.0.0.1 for the real client.

``FakeKubeAPI`` serves namespaces, service accounts, config maps, secrets, services,
persistent volume claims, pods, resource quotas, limit ranges, deployments (with ``scale``),
network policies and (read-only) endpoint slices with the apiserver's semantics: versions
and generations, 404/409/410/422/403 answers as ``Status`` objects, optimistic concurrency,
merge / strategic / JSON / server-side apply patches, deletion with preconditions,
finalizers and namespace termination, label and field selectors, paged lists, watches from
a resourceVersion (chunked JSON lines, bookmarks, ``timeoutSeconds``, 410 once the change
history is compacted), metadata-only lists and watches, bearer-token checks, and RBAC:
denials a test names, or (``grant_only``) exactly the rules of given Roles and ClusterRoles,
also answered by ``SelfSubjectAccessReview``. Objects are
indexed by kind and namespace, so tens of thousands list quickly. Controllers do nothing
unless a test asks (``mark_rollout``, ``finish_namespace_deletion`` or the ``auto_*``
switches). ``Request`` is one entry of the request journal.

Deliberate simplifications, so a test must not rely on them:
- server-side apply knows one field manager: fields missing from an apply body disappear,
  even those someone else set; there are no apply conflicts (``force`` changes nothing);
- strategic merge patch is a plain merge patch (lists are replaced, not merged by key);
- a list page after the first shows objects as they are now, not at the first page's
  version (a watch from that version replays the difference);
- no ``dryRun`` (answered 400), no ``sendInitialEvents``, no admission beyond namespace
  lifecycle, no quota enforcement;
- pods go at once on delete (no grace period), PVC storage may grow while unbound.
"""

from __future__ import annotations

from tests.support.kube_api.fake import FakeKubeAPI
from tests.support.kube_api.faults import Request
from tests.support.kube_api.verbs import ValidationFailure

__all__ = ["FakeKubeAPI", "Request", "ValidationFailure"]
