"""Names, labels and selectors of every Kubernetes object the ``kubernetes`` driver owns.

Names are derived from occ ids alone (never from memory or display names), so any worker finds
an object again; labels carry the raw ids so that teardown can list what an Agent or a
Namespace owns. This module is pure: it builds strings and dicts and talks to nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, Final

MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGER: Final = "occ"
"""Value of ``app.kubernetes.io/managed-by`` on every object occ owns."""

NAMESPACE_ID: Final = "occ.dev/namespace-id"
AGENT_ID: Final = "occ.dev/agent-id"
REVISION_ID: Final = "occ.dev/revision-id"
ROLE: Final = "occ.dev/role"
MODE: Final = "occ.dev/mode"
"""``embedded`` (one gateway Deployment per Agent) or ``dedicated`` (one per revision)."""

ADOPTED: Final = "occ.dev/adopted"
"""Annotation on a namespace occ adopted rather than created (``"true"``)."""
REVISION_ANNOTATION: Final = "occ.dev/revision-id"
"""Annotation on a gateway pod template: the revision it runs."""
FINGERPRINT_ANNOTATION: Final = "occ.dev/credential-fingerprint"
"""Annotation on a credential Secret: the keyed fingerprint of the credential."""
FINGERPRINT_KEY_ANNOTATION: Final = "occ.dev/credential-fingerprint-key"
"""Annotation on a credential Secret: the id of the installation key its fingerprint is under
(``fingerprints.key_id``); an observation that finds another id (or none) repairs it."""
CONTENT_ANNOTATION: Final = "occ.dev/content-sha256"

NAMESPACE_HASH_LENGTH: Final = 15
"""Hex digits of sha256(namespace id) in the name of a namespace occ creates."""

EMBEDDED: Final = "embedded"
DEDICATED: Final = "dedicated"

_ID: Final = re.compile(
    r"(agt|rev|ns)_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)


class Role:
    """Values of ``occ.dev/role``: what an object is for."""

    NAMESPACE: Final = "namespace"
    NETWORK_POLICY: Final = "network-policy"
    QUOTA: Final = "quota"
    LIMITS: Final = "limits"
    CONFIGURATION: Final = "configuration"
    CREDENTIAL: Final = "credential"
    SERVICE_ACCOUNT: Final = "service-account"
    STATE: Final = "state"
    SERVICE: Final = "service"
    GATEWAY: Final = "gateway"


def kubernetes_namespace(prefix: str, namespace_id: str) -> str:
    """The name of the namespace occ creates for an occ Namespace."""
    digest = hashlib.sha256(namespace_id.encode()).hexdigest()[:NAMESPACE_HASH_LENGTH]
    return f"{prefix}{digest}"


def slug(identifier: str) -> str:
    """An occ id as a DNS-1123 label: ``agt_<uuid>`` becomes ``agt-<uuid>``."""
    if not _ID.fullmatch(identifier):
        raise ValueError("not an occ agent, revision or namespace id")
    return identifier.replace("_", "-")


def agent_object(agent_id: str) -> str:
    """Name of the Agent's stable objects: ServiceAccount, Service, embedded Deployment."""
    return slug(agent_id)


def state_claim(agent_id: str) -> str:
    return f"{slug(agent_id)}-state"


def configuration_map(revision_id: str) -> str:
    return f"{slug(revision_id)}-config"


def credential_secret(revision_id: str) -> str:
    return f"{slug(revision_id)}-credential"


def dedicated_deployment(revision_id: str) -> str:
    return slug(revision_id)


DEFAULT_DENY: Final = "occ-default-deny"
ALLOW_DNS: Final = "occ-allow-dns"
RESOURCE_QUOTA: Final = "occ-quota"
LIMIT_RANGE: Final = "occ-limits"


def labels(
    role: str,
    *,
    namespace_id: str,
    agent_id: str | None = None,
    revision_id: str | None = None,
    mode: str | None = None,
) -> dict[str, str]:
    """The labels of an object occ owns (only the ids that apply to it)."""
    result = {MANAGED_BY: MANAGER, NAMESPACE_ID: namespace_id, ROLE: role}
    if agent_id is not None:
        result[AGENT_ID] = agent_id
    if revision_id is not None:
        result[REVISION_ID] = revision_id
    if mode is not None:
        result[MODE] = mode
    return result


def selector(match: Mapping[str, str]) -> str:
    """A label selector string (``k=v,k2=v2``) for a list call."""
    return ",".join(f"{key}={value}" for key, value in sorted(match.items()))


def owned_by_namespace(namespace_id: str) -> str:
    return selector({MANAGED_BY: MANAGER, NAMESPACE_ID: namespace_id})


def owned_by_agent(agent_id: str) -> str:
    return selector({MANAGED_BY: MANAGER, AGENT_ID: agent_id})


def gateway_selector(agent_id: str, mode: str, revision_id: str | None) -> dict[str, str]:
    """Pod labels a gateway Deployment or the Agent's Service selects on.

    Embedded: stable per Agent (a Deployment's selector is immutable). Dedicated: the
    revision's pods (each dedicated Deployment has its own selector, and activation points
    the Service at one).
    """
    match = {AGENT_ID: agent_id, ROLE: Role.GATEWAY, MODE: mode}
    if mode == DEDICATED:
        match[REVISION_ID] = revision_id or ""
    return match


Manifest = dict[str, Any]
"""An object as the API takes it: a plain JSON-able dict in camelCase wire form."""


def metadata(
    name: str,
    namespace: str | None,
    labels: Mapping[str, str],
    annotations: Mapping[str, str] | None = None,
) -> Manifest:
    """An object's ``metadata``: its name, namespace, labels and annotations."""
    metadata: Manifest = {"name": name, "labels": dict(labels)}
    if namespace is not None:
        metadata["namespace"] = namespace
    if annotations:
        metadata["annotations"] = dict(annotations)
    return metadata
