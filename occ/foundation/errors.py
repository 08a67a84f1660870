"""The one exception tree of occ; domain errors, nothing about HTTP.

    OccError
    ├── InvalidInput            bad input; carries the paths of the invalid fields
    │   └── InvalidSettings     a bad setting; its path is the key as the operator wrote it
    │       ├── AuthSecretInvalid    OCC_AUTH_SECRET missing or too short for sign-in
    │       ├── AuthBaseUrlInvalid   OCC_AUTH_BASE_URL not an origin sign-in can use
    │       ├── ExternalSignInNativeAdminUnsupported   a provider set with native admin on
    │       └── EnvironmentNotSet    OCC_ENV unset in a process's environment (outside occ dev)
    ├── Unauthenticated         no valid credentials
    ├── RateLimited             too many requests (or failed sign-ins) from one client
    ├── NotFound                the resource does not exist (or may not be seen)
    ├── Forbidden               authorization denied; carries the decision
    │   └── CsrfTokenInvalid    a cookie-authenticated change without the session's CSRF token
    ├── Conflict                the request contradicts current state
    │   ├── NamespaceNotReady
    │   ├── NamespaceNotEmpty
    │   ├── AgentDeleting
    │   ├── QuotaExceeded       a Namespace quota is used up; nothing was written
    │   ├── LogsUnavailable     the Agent's runtime has no logs to read now
    │   ├── LogsUnsupported     the Compute Driver cannot read runtime logs
    │   ├── LastAdministrator   no acting administrator of the Installation would be left
    │   ├── IdempotencyConflict a work key already belongs to another owner
    │   ├── IdempotencyKeyInUse  a request with this Idempotency-Key applied or is applying
    │   └── AuditLogBusy        a long reader holds the audit log; its DDL gave up
    ├── PreconditionFailed      the resource changed since the caller read it (If-Match)
    ├── ClaimLost               a claim-fenced write found no live claim
    ├── UnknownOutcome          a COMMIT may or may not have happened
    ├── SecretUnreadable        a stored Secret value cannot be opened
    └── DependencyUnavailable   the database or another dependency failed
        └── SchemaTooNew        the database was migrated by a newer release than this one

Web maps this tree to problem+json once; workers map it to reason codes. A field path
names fields as the code that checked them does (snake_case names, list indexes); each
edge spells it for its audience (the API in camelCase, see ``occ.web.problems``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeAlias

Path: TypeAlias = tuple[str | int, ...]
"""Where a field is, from the top of the input: names and list indexes (``()`` is the whole
input)."""


def json_pointer(tokens: Iterable[str | int]) -> str:
    """The JSON Pointer (RFC 6901) of a path whose names are spelled as given."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


@dataclass(frozen=True)
class FieldError:
    """One invalid field: its path and what is wrong with it."""

    path: Path
    message: str

    @property
    def pointer(self) -> str:
        """The path as a JSON Pointer, its names as the path spells them."""
        return json_pointer(self.path)


class OccError(Exception):
    """Something went wrong in occ."""

    code: ClassVar[str] = "INTERNAL_ERROR"

    def __init__(self, detail: str | None = None) -> None:
        self.detail = detail or (self.__doc__ or self.code).strip()
        super().__init__(self.detail)


class InvalidInput(OccError):
    """The request is not valid."""

    code = "INVALID_REQUEST"

    def __init__(self, detail: str | None = None, errors: Sequence[FieldError] = ()) -> None:
        super().__init__(detail)
        self.errors = tuple(errors)

    @classmethod
    def at(cls, path: Path, message: str) -> Self:
        """An error about the one field at ``path``."""
        return cls(message, [FieldError(path, message)])


class InvalidSettings(InvalidInput):
    """The settings are not valid.

    Its paths name the keys as the operator wrote them (an environment variable, a YAML key),
    so every edge shows them unchanged.
    """


class AuthSecretInvalid(InvalidSettings):
    """``OCC_AUTH_SECRET`` is missing or shorter than 32 characters while sign-in is on."""

    code = "AUTH_SECRET_INVALID"


class AuthBaseUrlInvalid(InvalidSettings):
    """``OCC_AUTH_BASE_URL`` is not an absolute HTTP(S) origin sign-in can redirect to."""

    code = "AUTH_BASE_URL_INVALID"


class ExternalSignInNativeAdminUnsupported(InvalidSettings):
    """A GitHub, Google or OIDC provider is set while native admin is on: external sign-in
    supports host-only cookies only."""

    code = "EXTERNAL_SIGN_IN_NATIVE_ADMIN_UNSUPPORTED"


class EnvironmentNotSet(InvalidSettings):
    """``OCC_ENV`` is unset: every process but ``occ dev``'s must be told it runs in
    ``development`` or ``production`` rather than fall back to development's defaults."""

    code = "ENVIRONMENT_NOT_SET"


class Unauthenticated(OccError):
    """A valid API key or session is required."""

    code = "UNAUTHENTICATED"


class RateLimited(OccError):
    """Too many requests; retry after ``retry_after_s`` seconds."""

    code = "RATE_LIMITED"

    def __init__(
        self, detail: str | None = None, *, limit: int, remaining: int, retry_after_s: int
    ) -> None:
        super().__init__(detail)
        self.limit = limit
        self.remaining = remaining
        self.retry_after_s = retry_after_s


class NotFound(OccError):
    """The resource does not exist."""

    code = "NOT_FOUND"


class Forbidden(OccError):
    """The caller may not do this."""

    code = "FORBIDDEN"

    def __init__(self, detail: str | None = None, decision: Any = None) -> None:
        super().__init__(detail)
        self.decision = decision


class CsrfTokenInvalid(Forbidden):
    """A request made with the session cookie that changes something must send the session's
    CSRF token."""

    code = "CSRF_TOKEN_INVALID"


class Conflict(OccError):
    """The request conflicts with the current state of the resource."""

    code = "RESOURCE_CONFLICT"


class NamespaceNotReady(Conflict):
    """The Namespace is not ready."""

    code = "NAMESPACE_NOT_READY"


class NamespaceNotEmpty(Conflict):
    """The Namespace still holds resources."""

    code = "NAMESPACE_NOT_EMPTY"


class AgentDeleting(Conflict):
    """The Agent is being deleted."""

    code = "AGENT_DELETING"


class QuotaExceeded(Conflict):
    """A Namespace quota (``quota``: ``agents``, ``secrets``, ``configurations``,
    ``revisionsPerAgent``) is used up: ``usage`` of ``limit``."""

    code = "QUOTA_EXCEEDED"

    def __init__(self, detail: str | None = None, *, quota: str, limit: int, usage: int) -> None:
        super().__init__(detail)
        self.quota = quota
        self.limit = limit
        self.usage = usage


class AgentNotRunning(Conflict):
    """The Agent has no running revision (it is stopped, or nothing was activated yet)."""

    code = "AGENT_NOT_RUNNING"


class LogsUnavailable(Conflict):
    """The Agent's runtime has no logs to read now (its process, container or Pod is gone)."""

    code = "LOGS_UNAVAILABLE"


class LogsUnsupported(Conflict):
    """The installation's Compute Driver cannot read runtime logs."""

    code = "LOGS_UNSUPPORTED"


class LastAdministrator(Conflict):
    """No principal able to act would be left with ``installation:administer``."""

    code = "LAST_ADMINISTRATOR"


class IdempotencyConflict(Conflict):
    """The work key already belongs to another owner, actor or target."""

    code = "RESOURCE_CONFLICT"


class IdempotencyKeyInUse(Conflict):
    """A request with this ``Idempotency-Key`` is still running; retry once it answered."""

    code = "IDEMPOTENCY_KEY_IN_USE"


class AuditLogBusy(Conflict):
    """The audit log is busy: an export or another long reader holds it, so its partitions
    cannot change now (nothing was changed); retry once the reader is done."""

    code = "AUDIT_LOG_BUSY"


class PreconditionFailed(OccError):
    """The resource changed since the caller read it (its ``If-Match`` is stale)."""

    code = "PRECONDITION_FAILED"


class ClaimLost(OccError):
    """The claim is no longer live: another worker owns the item, or the lease ran out."""

    code = "CLAIM_LOST"

    def __init__(self, work_id: str, detail: str | None = None) -> None:
        super().__init__(detail)
        self.work_id = work_id


class UnknownOutcome(OccError):
    """The database may or may not have committed the change; do not blindly replay it."""

    code = "UNKNOWN_OUTCOME"


class SecretUnreadable(OccError):
    """A stored Secret value cannot be opened (wrong key, wrong row, damaged, or gone)."""

    code = "SECRET_UNREADABLE"


class DependencyUnavailable(OccError):
    """A dependency of occ is unavailable."""

    code = "DEPENDENCY_UNAVAILABLE"


class SchemaTooNew(DependencyUnavailable):
    """The database schema is at a migration this release does not know: a newer release
    migrated it. This process refuses to start rather than serve it."""

    code = "SCHEMA_TOO_NEW"

    def __init__(self, applied: str) -> None:
        super().__init__(
            f"SCHEMA_TOO_NEW: the database schema is at revision {applied}, which this release"
            " does not know (a newer release migrated it); run the newer release"
        )
        self.applied = applied
