"""A draft Agent's fields: checked one by one into the draft's columns, the Configuration,
Secret or managed account they name checked against the Namespace, and described for the audit.
Shared by creating and updating an Agent (``occ.controller.agents``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Protocol

from occ.controller import admission
from occ.foundation import errors, harnesses, ids
from occ.state import accounts, agents, configurations, secrets
from occ.state.db import Session

_VERSION: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")


class Draft(Protocol):
    """The fields of an Agent's draft a command gives (a creation all, an update some)."""

    @property
    def name(self) -> str | None: ...
    @property
    def configuration_id(self) -> str | None: ...
    @property
    def harness(self) -> agents.Harness | None: ...
    @property
    def execution_mode(self) -> harnesses.ExecutionMode | None: ...
    @property
    def harness_auth(self) -> agents.HarnessAuth | None: ...


def draft_columns(draft: Draft) -> dict[str, Any]:
    """The draft columns the given fields set, each checked on its own, in this order
    (``InvalidInput`` at the field's path); ``None`` sets nothing.

    The web layer's schema already made sure of the harness and execution mode catalogues and
    of the harness authentication's kind.
    """
    name, configuration_id, harness = draft.name, draft.configuration_id, draft.harness
    execution_mode, harness_auth = draft.execution_mode, draft.harness_auth
    columns: dict[str, Any] = {}
    if name is not None:
        columns["name"] = admission.name(name, ("name",))
    if configuration_id is not None:
        columns["configuration_id"] = ids.require(
            "configuration", configuration_id, ("configuration_id",)
        )
    if harness is not None:
        if not _VERSION.fullmatch(harness.version):
            raise errors.InvalidInput.at(
                ("harness", "version"), "must be 1 to 64 characters of A-Z a-z 0-9 . _ -"
            )
        columns["harness_id"] = str(harness.id)
        columns["harness_version"] = harness.version
    if execution_mode is not None:
        columns["execution_mode"] = str(execution_mode)
    if harness_auth is not None:
        columns.update(harness_auth_columns(harness_auth))
    return columns


def harness_auth_columns(harness_auth: agents.HarnessAuth) -> dict[str, str | None]:
    """The draft's two source columns for ``harness_auth``: one set, the other cleared."""
    if harness_auth.kind == agents.ACCOUNT_SOURCE:
        account_id = ids.require("account", harness_auth.account_id, ("harness_auth", "account_id"))
        return {"harness_auth_secret_id": None, "harness_auth_account_id": account_id}
    secret_id = ids.require("secret", harness_auth.secret_id, ("harness_auth", "secret_id"))
    return {"harness_auth_secret_id": secret_id, "harness_auth_account_id": None}


def check_execution_mode(columns: Mapping[str, Any], *, current: agents.Agent | None) -> None:
    """The execution mode must be the harness's own (openclaw embedded, codex dedicated)."""
    harness_id = columns.get("harness_id", current.harness_id if current else None)
    mode = columns.get("execution_mode", current.execution_mode if current else None)
    if harness_id is not None and harnesses.MODES[harness_id] != mode:
        raise errors.InvalidInput.at(
            ("execution_mode",),
            f"must be {harnesses.MODES[harness_id]} for harness {harness_id}",
        )


def check_references(session: Session, namespace_id: str, columns: Mapping[str, Any]) -> None:
    """The referenced Configuration and Secret must exist in the Namespace."""
    configuration_id = columns.get("configuration_id")
    if configuration_id is not None and not configurations.hold_reference(
        session, namespace_id, configuration_id
    ):
        raise errors.InvalidInput.at(
            ("configuration_id",), "no such configuration in this Namespace"
        )
    secret_id = columns.get("harness_auth_secret_id")
    if secret_id is not None and not secrets.hold_reference(session, namespace_id, secret_id):
        raise errors.InvalidInput.at(
            ("harness_auth", "secret_id"), "no such secret in this Namespace"
        )
    account_id = columns.get("harness_auth_account_id")
    if account_id is not None:
        account = accounts.get(session, namespace_id, account_id, lock=True)
        if account is None:
            raise errors.InvalidInput.at(
                ("harness_auth", "account_id"), "no such account in this Namespace"
            )
        if account.withdrawn:
            raise errors.InvalidInput.at(
                ("harness_auth", "account_id"), "the account Backend withdrew this account"
            )


def describe(columns: Mapping[str, Any]) -> dict[str, Any]:
    """Parsed draft columns as audit details (camelCase, ids only)."""
    details: dict[str, Any] = {}
    for key, name in (
        ("name", "name"),
        ("configuration_id", "configurationId"),
        ("execution_mode", "executionMode"),
    ):
        if key in columns:
            details[name] = columns[key]
    if "harness_id" in columns:
        details["harness"] = {"id": columns["harness_id"], "version": columns["harness_version"]}
    if columns.get("harness_auth_secret_id") is not None:
        details["harnessAuth"] = {"kind": "secret", "secretId": columns["harness_auth_secret_id"]}
    if columns.get("harness_auth_account_id") is not None:
        details["harnessAuth"] = {
            "kind": agents.ACCOUNT_SOURCE,
            "accountId": columns["harness_auth_account_id"],
        }
    return details
