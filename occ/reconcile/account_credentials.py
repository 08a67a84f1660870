"""A revision's managed-account credential, checked and read right before effects.

Under the pass's live claim, after the actor's re-authorization (``account:read`` on the pinned
account, ``revision_snapshot.deploy_checks``), the worker asks the account Backend who owns the
pinned token reference. It must still be the pinned account, under the pinned Backend, driver
and workspace, and not withdrawn (``occ.drivers.account.ownership``); then the token is read
and handed to the Compute Driver like a Secret's value (a ``Credential``, fingerprinted with
the revision's key). Otherwise the item fails with the refusal's code, and the refusal is
audited as a denial of the account as the harness source. The token never reaches a row, an
audit event or a log line.

The pass asks the Backend once; a withdrawal occ records after that is caught when the active
pointer moves to the revision (``withdrawn_meanwhile``), refused the same way.
"""

from __future__ import annotations

from occ.drivers.account import ownership
from occ.drivers.compute import base
from occ.foundation import codes, errors, fingerprints
from occ.reconcile import environment, outcome, settle
from occ.reconcile.context import ClaimContext
from occ.state import accounts, audit, revisions
from occ.state.db import Session

_CODES = {refusal: codes.Code[refusal.value] for refusal in ownership.Refusal}


def deliverable(
    session: Session,
    context: ClaimContext,
    worker: environment.Worker,
    revision: revisions.Revision,
    pinned: ownership.Pinned,
) -> base.Credential | outcome.PassResult:
    """The pinned account's token as the revision's credential, or the failed item."""
    backend = worker.accounts
    if backend is None:
        return settle.fail(session, context, codes.Code.HARNESS_CREDENTIAL_UNAVAILABLE)
    refused = ownership.refusal(pinned, backend.credential(pinned.token_reference))
    if refused is None:
        try:
            value = backend.token_value(pinned.token_reference)
        except errors.SecretUnreadable:
            refused = ownership.Refusal.WITHDRAWN
        else:
            key = fingerprints.revision_key(worker.settings.credential_fingerprint_key, revision.id)
            return base.Credential(value, key)
    return _refuse(session, context, pinned, refused)


def withdrawn_meanwhile(
    session: Session, context: ClaimContext, revision: revisions.Revision
) -> outcome.PassResult | None:
    """Right before the active pointer moves to ``revision``: the failed item when occ has
    recorded its pinned account's withdrawal (or holds the account no more), else ``None``.

    The account is read under a shared lock, taken before the Agent's row as
    ``account_withdrawals.record_withdrawal`` takes them (``FOR UPDATE``), so the two
    serialize: a withdrawal that commits first is seen here, and one that waits finds the
    Agent running the revision and admits its stop.
    """
    pinned = ownership.pinned(revision.harness_auth)
    if pinned is None:
        return None
    refused = recorded_refusal(
        accounts.get_shared(session, revision.namespace_id, pinned.account_id)
    )
    return None if refused is None else _refuse(session, context, pinned, refused)


def recorded_refusal(account: accounts.Account | None) -> ownership.Refusal | None:
    """Why occ's own record of the pinned account forbids it (gone, or withdrawn), or
    ``None``."""
    if account is None:
        return ownership.Refusal.UNKNOWN
    return ownership.Refusal.WITHDRAWN if account.withdrawn else None


def _refuse(
    session: Session, context: ClaimContext, pinned: ownership.Pinned, refused: ownership.Refusal
) -> outcome.PassResult:
    """Fail the item with the refusal's code, audited as a denial of the account as the
    harness source."""
    code = _CODES[refused]
    result = settle.fail(session, context, code)
    audit.work_event(
        session,
        context.claim,
        kind="authorization_denial",
        action="agents.deploy",
        outcome="denied",
        resource_kind="account",
        resource_id=pinned.account_id,
        details={"reasonCode": code, "harnessAuth": ownership.SOURCE_KIND},
    )
    return result
