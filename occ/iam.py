"""Authorization: the permission table and ``authorize(principal, permission, resource)``.

Reads current policy from the caller's session (one query per decision, or one per principal
and Namespace for a request that passes a ``PolicyCache``) and decides; writes nothing, audits
nothing, knows nothing of HTTP or Celery.

A request is allowed when the principal exists and is not disabled, a Namespace-scoped
principal stays inside its Namespace, at least one binding grants the permission on the
resource, and no restriction denies it. Restrictions beat every grant.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from occ.foundation import errors
from occ.state import grants, restrictions
from occ.state.db import Session

PERMISSION_TABLE: Final[Mapping[str, tuple[str, ...]]] = {
    "installation": ("read", "administer"),
    "namespace": ("create", "read", "delete"),
    "configuration": ("create", "read", "update", "delete"),
    "secret": ("create", "read", "update", "delete", "operate"),
    "agent": (
        "create",
        "read",
        "update",
        "delete",
        "deploy",
        "operate",
        "administer",
        "read_logs",
        "use",
    ),
    "agent_revision": ("read",),
    "account": ("read",),
}
"""Resource kind -> actions some operation checks; the migration's CHECK allows exactly these."""

PERMISSIONS: Final = tuple(
    f"{kind}:{action}" for kind, actions in PERMISSION_TABLE.items() for action in actions
)

ADMINISTRATOR_PERMISSIONS: Final = tuple(
    permission for permission in PERMISSIONS if permission != "agent:use"
)
"""What the bootstrap "Installation administrator" Role holds: all but using an Agent's
runtime (reading its logs included)."""

RESOURCE_KINDS: Final = frozenset(PERMISSION_TABLE)

_PERMISSION_SET: Final = frozenset(PERMISSIONS)

_NAMESPACE_ROLE_FORBIDDEN: Final = frozenset(
    {"installation:read", "installation:administer", "namespace:create", "namespace:delete"}
)


class Reason(enum.StrEnum):
    """Why a decision went the way it did (stable; audited and mapped to reason codes)."""

    ALLOWED = "allowed"
    UNKNOWN_PERMISSION = "unknown_permission"
    PRINCIPAL_NOT_FOUND = "principal_not_found"
    PRINCIPAL_DISABLED = "principal_disabled"
    OUTSIDE_PRINCIPAL_NAMESPACE = "outside_principal_namespace"
    NO_MATCHING_BINDING = "no_matching_binding"
    RESTRICTED = "restricted"


_ACTOR_REVOKED: Final = frozenset({Reason.PRINCIPAL_NOT_FOUND, Reason.PRINCIPAL_DISABLED})


@dataclass(frozen=True)
class Resource:
    """What a permission is checked on: a kind, an id, and the Namespace it lives in.

    Installation resources have no Namespace; a Namespace's ``namespace_id`` is its own id;
    every other kind needs one. Collection operations check the parent (Namespace creation is
    ``namespace:create`` on the Installation).
    """

    kind: str
    id: str
    namespace_id: str | None

    def __post_init__(self) -> None:
        if self.kind not in RESOURCE_KINDS:
            raise ValueError(f"unknown resource kind {self.kind!r}")
        if self.kind == "installation" and self.namespace_id is not None:
            raise ValueError("the installation lives in no Namespace")
        if self.kind == "namespace" and self.namespace_id != self.id:
            raise ValueError("a Namespace resource's namespace_id is its own id")
        if self.kind not in {"installation", "namespace"} and not self.namespace_id:
            raise ValueError(f"a {self.kind} resource needs its namespace_id")

    @classmethod
    def installation(cls, installation_id: str) -> Resource:
        return cls("installation", installation_id, None)

    @classmethod
    def namespace(cls, namespace_id: str) -> Resource:
        return cls("namespace", namespace_id, namespace_id)


@dataclass(frozen=True)
class Evidence:
    """What a decision rested on; ids sorted and unique."""

    principal_id: str | None = None
    binding_ids: tuple[str, ...] = ()
    role_ids: tuple[str, ...] = ()
    restriction_ids: tuple[str, ...] = ()

    def as_details(self) -> dict[str, Any]:
        """The evidence as an audit-details object."""
        return {
            "principalId": self.principal_id,
            "bindingIds": list(self.binding_ids),
            "roleIds": list(self.role_ids),
            "restrictionIds": list(self.restriction_ids),
        }


@dataclass(frozen=True)
class Decision:
    """The answer to one authorization request."""

    allowed: bool
    reason: Reason
    evidence: Evidence = field(default_factory=Evidence)

    @property
    def actor_revoked(self) -> bool:
        """The principal is gone or disabled (workers map this to ``ACTOR_REVOKED``)."""
        return self.reason in _ACTOR_REVOKED


def is_permission(value: object) -> bool:
    """Whether ``value`` is a ``kind:action`` string of the permission table."""
    return isinstance(value, str) and value in _PERMISSION_SET


def check_permissions(
    values: Sequence[object],
    *,
    namespace_scoped: bool = False,
    path: errors.Path = ("permissions",),
) -> tuple[str, ...]:
    """The permissions of a new Role, sorted and unique, or ``InvalidInput`` at ``path`` (or
    at the index of the offending one below it).

    A Namespace-scoped Role may not hold Installation permissions nor create or delete
    Namespaces.
    """
    if not values:
        raise errors.InvalidInput.at(path, "must list at least one permission")
    for index, value in enumerate(values):
        if not is_permission(value):
            raise errors.InvalidInput.at((*path, index), "is not a known permission")
        if namespace_scoped and value in _NAMESPACE_ROLE_FORBIDDEN:
            raise errors.InvalidInput.at(
                (*path, index), "a Namespace role may not hold this permission"
            )
    return tuple(sorted({str(value) for value in values}))


class PolicyCache:
    """The policies one request loaded: one load per principal and Namespace, every permission.

    Only for a use case that changes no policy in its transaction (a cached policy does not see
    later writes of the same transaction). ``loads`` counts the queries it made.
    """

    def __init__(self) -> None:
        self._policies: dict[tuple[str, str | None], grants.Policy | None] = {}
        self.loads = 0

    def preload(
        self, session: Session, principal_ids: Collection[str], namespace_id: str | None
    ) -> None:
        """Load the policies of the principals not loaded yet, all in one query."""
        missing = {each for each in principal_ids if (each, namespace_id) not in self._policies}
        if not missing:
            return
        loaded = grants.load_policies(
            session, sorted(missing), permission=None, namespace_id=namespace_id
        )
        for principal_id in missing:
            self._policies[principal_id, namespace_id] = loaded.get(principal_id)
        self.loads += 1

    def policy(
        self, session: Session, principal_id: str, namespace_id: str | None
    ) -> grants.Policy | None:
        """The principal's policy for every resource of the Namespace (loaded on first use)."""
        key = (principal_id, namespace_id)
        if key not in self._policies:
            self._policies[key] = grants.load_policy(
                session, principal_id, permission=None, namespace_id=namespace_id
            )
            self.loads += 1
        return self._policies[key]


def authorize(
    session: Session,
    principal_id: str,
    permission: str,
    resource: Resource,
    *,
    policies: PolicyCache | None = None,
) -> Decision:
    """Decide whether the principal may use ``permission`` on ``resource`` under current policy.

    With ``policies``, the principal's policy in the resource's Namespace is loaded once for
    the whole request.
    """
    if not is_permission(permission):
        return Decision(False, Reason.UNKNOWN_PERMISSION)
    if policies is not None:
        return evaluate(
            policies.policy(session, principal_id, resource.namespace_id), permission, resource
        )
    policy = grants.load_policy(
        session,
        principal_id,
        permission=permission,
        namespace_id=resource.namespace_id,
        resource_id=resource.id,
    )
    return evaluate(policy, permission, resource)


def authorize_each(
    session: Session, principal_id: str, permission: str, resources: Iterable[Resource]
) -> list[Decision]:
    """One decision per resource, in order, from a single policy read (to filter lists)."""
    candidates = list(resources)
    if not is_permission(permission):
        return [Decision(False, Reason.UNKNOWN_PERMISSION) for _ in candidates]
    if not candidates:
        return []
    policy = grants.load_policy(session, principal_id, permission=permission, everywhere=True)
    return [evaluate(policy, permission, resource) for resource in candidates]


def require(session: Session, principal_id: str, permission: str, resource: Resource) -> Decision:
    """The allowing decision, or ``Forbidden`` carrying the denying one."""
    decision = authorize(session, principal_id, permission, resource)
    if not decision.allowed:
        raise errors.Forbidden(decision=decision)
    return decision


def evaluate(policy: grants.Policy | None, permission: str, resource: Resource) -> Decision:
    """The decision for a loaded policy (``None``: no such principal); pure."""
    if not is_permission(permission):
        return Decision(False, Reason.UNKNOWN_PERMISSION)
    if policy is None:
        return Decision(False, Reason.PRINCIPAL_NOT_FOUND)
    principal = policy.principal
    if principal.disabled:
        return Decision(False, Reason.PRINCIPAL_DISABLED, Evidence(principal.id))
    if principal.namespace_id is not None and principal.namespace_id != resource.namespace_id:
        return Decision(False, Reason.OUTSIDE_PRINCIPAL_NAMESPACE, Evidence(principal.id))
    grants = [grant for grant in policy.grants if _grants(grant, permission, resource)]
    restrictions = [
        rule for rule in policy.restrictions if _restricts(rule, principal.id, permission, resource)
    ]
    evidence = Evidence(
        principal.id,
        tuple(sorted({grant.binding_id for grant in grants})),
        tuple(sorted({grant.role_id for grant in grants})),
        tuple(sorted({rule.id for rule in restrictions})),
    )
    if not grants:
        return Decision(False, Reason.NO_MATCHING_BINDING, evidence)
    if restrictions:
        return Decision(False, Reason.RESTRICTED, evidence)
    return Decision(True, Reason.ALLOWED, evidence)


def _grants(grant: grants.Grant, permission: str, resource: Resource) -> bool:
    return (
        permission in grant.permissions
        and grant.role_namespace_id in (None, resource.namespace_id)
        and grant.namespace_id in (None, resource.namespace_id)
        and (
            grant.resource_kind is None
            or (grant.resource_kind, grant.resource_id) == (resource.kind, resource.id)
        )
    )


def _restricts(
    rule: restrictions.Restriction, principal_id: str, permission: str, resource: Resource
) -> bool:
    return (
        rule.permission == permission
        and rule.principal_id in (None, principal_id)
        and rule.namespace_id in (None, resource.namespace_id)
        and rule.resource_id in (None, resource.id)
    )
