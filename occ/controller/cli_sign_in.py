"""``occ login --browser``: a person signs the CLI in through the browser's sign-in and the
CLI gets a revocable token of their own.

The sign-in's callback, when the CLI started it, calls ``issue_code`` instead of starting a
browser session: a row of issuer ``occ:cli-code`` that authenticates nothing and lives two
minutes (audited as ``sessions.issue_link``). The CLI trades it once (``redeem_code``) for a
session of issuer ``occ:cli`` (audited as ``sessions.create``), which it presents as a Bearer
token: listed, revoked and ended with the principal like every session, never accepted in a
cookie. The proof that the CLI which started the sign-in is the one trading the code (PKCE)
is checked by the web layer, which carries the challenge.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from occ.controller import sign_in
from occ.foundation import errors
from occ.state import user_sessions
from occ.state.db import Database

CODE_LIFETIME: Final = dt.timedelta(minutes=2)
"""How long a CLI sign-in code may wait for the CLI to trade it."""


def issue_code(db: Database, command: sign_in.SignIn, *, secret_key: str) -> str:
    """A one-time code for the CLI the person signed in for (their principal linked on its
    first sign-in, as by the browser's).

    Raises:
        InvalidInput: the issuer or subject is empty or too long.
        Unauthenticated: the linked principal is disabled (audited as a denied sign-in).
    """
    sign_in.check_identity(command)
    with db.transaction() as session:
        principal_id = sign_in.admitted(session, command)
        if principal_id is not None:
            started = sign_in.start_session(
                session,
                principal_id,
                user_sessions.CLI_CODE_ISSUER,
                sign_in.SessionPolicy(secret_key=secret_key, lifetime=CODE_LIFETIME),
                {"issuer": command.issuer, "principalId": principal_id},
                action="sessions.issue_link",
            )
    if principal_id is None:
        raise errors.Unauthenticated("this account is disabled")
    return started.token


def redeem_code(
    db: Database, code: str, policy_: sign_in.SessionPolicy
) -> user_sessions.StartedSession:
    """Trade a CLI sign-in code, once, for a CLI token of its principal.

    Raises:
        Unauthenticated: not a live CLI code (malformed, used, expired, another kind of
            token), or its principal is disabled.
    """
    started = sign_in.redeem(
        db,
        code,
        policy_,
        spends=user_sessions.CLI_CODE_ISSUER,
        starts=user_sessions.CLI_ISSUER,
    )
    if started is None:
        raise errors.Unauthenticated("the sign-in code is invalid, used or expired")
    return started
