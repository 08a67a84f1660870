"""Sign-in use cases: an identity provider's verified (issuer, subject) becomes a user session;
sessions are listed, signed out and revoked.

A signed-in person is a principal of kind ``human`` linked to the pair for good (never by an
e-mail address): the first sign-in of a pair creates that principal, with no bindings, and
links it (audited as ``principals.link``); an administrator then grants it Roles like any
principal, so a session is authorized by exactly the IAM that authorizes API keys. Every
sign-in starts a new session and revokes the one the browser held (rotation), audited as
``sessions.create``; sign-out and revocation are audited as ``sessions.revoke``. Tokens leave
only through the return value of ``sign_in``: never audited, logged or stored.
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from dataclasses import dataclass
from typing import Final

from occ.controller import admission, policy
from occ.foundation import errors
from occ.state import audit, iam_policy, identities, user_sessions
from occ.state.db import Database, Session

_NAME_MAX: Final = 200
_NEVER_IDLE: Final = dt.timedelta(days=36500)


@dataclass(frozen=True, kw_only=True)
class SignIn:
    """A verified identity signing in: what the provider asserted, and the token of the
    session the browser still held (revoked by the rotation), if any."""

    issuer: str
    subject: str
    display_name: str
    replaces: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionPolicy:
    """What keys and bounds sessions: ``OCC_AUTH_SECRET`` and the absolute timeout."""

    secret_key: str
    lifetime: dt.timedelta


@dataclass(frozen=True, kw_only=True)
class RevokeSession:
    """Ending one session: its owner's or, for an administrator, anyone's."""

    session_id: str


def sign_in(db: Database, command: SignIn, policy_: SessionPolicy) -> user_sessions.StartedSession:
    """Start a session for the identity, linking it to a new principal on its first sign-in.

    Raises:
        InvalidInput: the issuer or subject is empty or too long.
        Unauthenticated: the linked principal is disabled (audited as a denied sign-in).
    """
    check_identity(command)
    issuer = command.issuer
    with db.transaction() as session:
        principal_id = admitted(session, command)
        if principal_id is None:
            started = None
        else:
            rotated = _revoke_presented(session, command.replaces, policy_.secret_key)
            started = start_session(
                session,
                principal_id,
                issuer,
                policy_,
                {"issuer": issuer, "rotatedSessionId": rotated},
            )
    if started is None:
        raise errors.Unauthenticated("this account is disabled")
    return started


def check_identity(command: SignIn) -> None:
    """``InvalidInput`` unless the issuer and subject have lengths occ can store."""
    if not 1 <= len(command.issuer) <= 2048:
        raise errors.InvalidInput.at(("issuer",), "must be 1 to 2048 characters long")
    if not 1 <= len(command.subject) <= 255:
        raise errors.InvalidInput.at(("subject",), "must be 1 to 255 characters long")


def admitted(session: Session, command: SignIn) -> str | None:
    """The principal the identity signs in as (linked on its first sign-in), or ``None`` when
    it is disabled (audited as a denied ``sessions.create``)."""
    issuer, subject = command.issuer, command.subject
    principal_id = _linked_principal(session, issuer, subject, command.display_name)
    if not policy.principal(session, principal_id, lock=True).disabled:
        return principal_id
    audit.append(
        session,
        kind=audit.EventKind.ACCESS,
        outcome=audit.EventOutcome.DENIED,
        action="sessions.create",
        actor_id=principal_id,
        resource_kind="principal",
        resource_id=principal_id,
        details={"issuer": issuer, "reason": "principal_disabled"},
    )
    return None


def sign_out(db: Database, *, token: str, secret_key: str) -> str | None:
    """Revoke the session ``token`` proves (audited); the id it revoked, or ``None`` when the
    token proves no unrevoked session."""
    with db.transaction() as session:
        return _revoke_presented(session, token, secret_key, reason="signed_out")


def current_session(db: Database, actor_id: str, session_id: str) -> user_sessions.UserSession:
    """The caller's own session ``session_id``.

    Raises:
        NotFound: the caller has no session with this id.
    """
    admission.require_id("user_session", session_id)
    with db.snapshot() as session:
        found = user_sessions.get(session, session_id)
    if found is None or found.principal_id != actor_id:
        raise errors.NotFound("the session does not exist")
    return found


def list_sessions(db: Database, actor_id: str) -> list[user_sessions.UserSession]:
    """The caller's own sessions (ended ones included), oldest first."""
    with db.snapshot() as session:
        return user_sessions.list_for(session, actor_id)


def revoke_session(
    db: Database, actor_id: str, command: RevokeSession
) -> user_sessions.UserSession:
    """End a session at once: the caller's own, or anyone's for an administrator of the
    Installation. Idempotent.

    Raises:
        NotFound: no session has this id.
        Forbidden: another principal's session, and the caller may not administer the
            Installation (audited).
    """
    session_id = command.session_id
    admission.require_id("user_session", session_id)
    with admission.guarded(db, actor_id) as session:
        found = admission.found(user_sessions.get(session, session_id, lock=True), "session")
        if found.principal_id != actor_id:
            policy.administer(session, actor_id, "sessions.revoke", {"sessionId": session_id})
        if found.revoked_at is not None:
            return found
        revoked = user_sessions.revoke(session, session_id)
        assert revoked is not None  # locked above
        _audit_revoked(session, actor_id, revoked, "revoked")
        return revoked


def _linked_principal(session: Session, issuer: str, subject: str, display_name: str) -> str:
    """The principal the pair is linked to; on its first sign-in, a new human principal."""
    found = identities.find(session, issuer=issuer, subject=subject)
    if found is not None:
        return found.principal_id
    principal = iam_policy.create_principal(
        session, name=principal_name(display_name, subject), kind=iam_policy.PrincipalKind.HUMAN
    )
    linked = identities.link(session, issuer=issuer, subject=subject, principal_id=principal.id)
    if linked is None:  # a concurrent first sign-in linked it; this principal rolls back
        raise errors.Conflict("this identity is signing in elsewhere; sign in again")
    audit.mutation(
        session,
        action="principals.link",
        actor_id=principal.id,
        resource_kind="principal",
        resource_id=principal.id,
        details={"issuer": issuer, "subject": subject},
    )
    return principal.id


def principal_name(display_name: str, subject: str) -> str:
    """A valid principal name for a new signed-in person: the provider's display name without
    control characters, trimmed to 200 characters, else the subject."""
    cleaned = "".join(c for c in display_name if unicodedata.category(c) != "Cc").strip()
    cleaned = cleaned[:_NAME_MAX].strip() or subject[:_NAME_MAX].strip()
    return cleaned or "user"


def _revoke_presented(
    session: Session, token: str | None, secret_key: str, reason: str = "rotated"
) -> str | None:
    """Revoke the unrevoked session ``token`` proves, audited; its id, else ``None``."""
    if not token:
        return None
    proven = user_sessions.identify(
        session, presented=token, secret_key=secret_key, idle=_NEVER_IDLE
    )
    if proven is None:
        return None
    revoked = user_sessions.revoke(session, proven.credential.id)
    assert revoked is not None
    _audit_revoked(session, proven.credential.principal_id, revoked, reason)
    return revoked.id


def start_session(
    session: Session,
    principal_id: str,
    issuer: str,
    policy_: SessionPolicy,
    details: dict[str, str | None],
    *,
    action: str = "sessions.create",
) -> user_sessions.StartedSession:
    """Start a session of the principal from ``issuer``, audited as ``action``."""
    started = user_sessions.start(
        session,
        principal_id=principal_id,
        issuer=issuer,
        secret_key=policy_.secret_key,
        lifetime=policy_.lifetime,
    )
    audit.mutation(
        session,
        action=action,
        actor_id=principal_id,
        resource_kind="user_session",
        resource_id=started.session.id,
        details=details,
    )
    return started


def _audit_revoked(
    session: Session, actor_id: str, revoked: user_sessions.UserSession, reason: str
) -> None:
    audit.mutation(
        session,
        action="sessions.revoke",
        actor_id=actor_id,
        resource_kind="user_session",
        resource_id=revoked.id,
        details={"principalId": revoked.principal_id, "reason": reason},
    )


def session_of(token: str) -> str | None:
    """The session id a well-formed token names (nothing is proven by it), else ``None``."""
    parsed = user_sessions.parse(token)
    return None if parsed is None else parsed[0]


def issue_one_time_link(
    db: Database, *, principal_id: str, secret_key: str, lifetime: dt.timedelta
) -> str:
    """A one-time sign-in token for the principal (``occ dev``'s link for the bootstrap
    administrator): a row that authenticates nothing until ``redeem_one_time_link`` trades it
    for a session, once, within ``lifetime``. Audited as ``sessions.issue_link``.

    Raises:
        NotFound: no enabled principal has this id.
    """
    with db.transaction() as session:
        principal = iam_policy.get_principal(session, principal_id)
        if principal is None or principal.disabled:
            raise errors.NotFound("the principal does not exist")
        started = start_session(
            session,
            principal_id,
            user_sessions.ONE_TIME_ISSUER,
            SessionPolicy(secret_key=secret_key, lifetime=lifetime),
            {"principalId": principal_id},
            action="sessions.issue_link",
        )
        return started.token


def redeem_one_time_link(
    db: Database, token: str, policy_: SessionPolicy, *, replaces: str | None = None
) -> user_sessions.StartedSession:
    """Trade a one-time sign-in token for a session of its principal; the token is spent
    (revoked) by the first redemption, and the browser's previous session is revoked too.

    Raises:
        Unauthenticated: not a live one-time token (malformed, spent, expired, another kind
            of token), or its principal is disabled.
    """
    started = redeem(
        db,
        token,
        policy_,
        spends=user_sessions.ONE_TIME_ISSUER,
        starts=user_sessions.LINK_ISSUER,
        replaces=replaces,
    )
    if started is None:
        raise errors.Unauthenticated("the sign-in link is invalid, used or expired")
    return started


def redeem(
    db: Database,
    token: str,
    policy_: SessionPolicy,
    *,
    spends: str,
    starts: str,
    replaces: str | None = None,
) -> user_sessions.StartedSession | None:
    """Spend the live row of issuer ``spends`` that ``token`` proves (revoked, audited with
    reason ``redeemed``) for a new session of issuer ``starts`` of its principal, revoking the
    session ``replaces`` proves; ``None`` (nothing changed) unless the row is live and its
    principal enabled."""
    with db.transaction() as session:
        proven = user_sessions.identify(
            session, presented=token, secret_key=policy_.secret_key, idle=_NEVER_IDLE
        )
        if proven is None or proven.credential.issuer != spends or proven.principal_disabled:
            return None
        link = user_sessions.get(session, proven.credential.id, lock=True)
        if link is None or link.revoked_at is not None:
            return None
        spent = user_sessions.revoke(session, link.id)
        assert spent is not None  # locked above
        _audit_revoked(session, link.principal_id, spent, "redeemed")
        _revoke_presented(session, replaces, policy_.secret_key)
        return start_session(
            session,
            link.principal_id,
            starts,
            policy_,
            {"issuer": starts, "linkSessionId": link.id},
        )
