"""The settings of the drivers beside Compute: where Secret values and Configuration documents
live, the lifecycle hooks (sandbox, IAM) and their owners, and the account Backend."""

from __future__ import annotations

from typing import Annotated

from occ.settings.sources import Variable
from occ.settings.topic import Topic


class Hooks(Topic):
    """The Secret and Configuration Drivers, the lifecycle hooks and the account Backend."""

    secret_driver: Annotated[str, Variable("OCC_SECRET_DRIVER")] = "sealed"  # noqa: S105
    """Where Secret values live: ``sealed`` (in their rows, sealed with the secret key) or
    ``kubernetes`` (tenant-local Kubernetes Secrets)."""

    configuration_driver: Annotated[str, Variable("OCC_CONFIGURATION_DRIVER")] = "database"
    """Where Configuration documents live: ``database`` (their rows) or ``filesystem``
    (development only, under the development configuration root)."""

    development_configuration_root: Annotated[
        str | None, Variable("OCC_DEVELOPMENT_CONFIGURATION_ROOT")
    ] = None
    """Root of the ``filesystem`` Configuration Driver, which only the API writes."""

    lifecycle_hook_owners: Annotated[str | None, Variable("OCC_LIFECYCLE_HOOK_OWNERS")] = None
    """Drivers that own lifecycle hooks, in order, as comma-separated capabilities
    (``configuration``, ``sandbox``, ``iam``; unset: the selected ones with hooks, in that
    order); an unavailable one stops the process at start-up."""

    sandbox_driver: Annotated[str | None, Variable("OCC_SANDBOX_DRIVER")] = None
    """Sandbox Driver: ``reference`` (unset: none)."""

    sandbox_egress_allow: list[str] | None = None
    """Host names the ``reference`` Sandbox Driver pins as the egress allow-list."""

    iam_hook: Annotated[str | None, Variable("OCC_IAM_HOOK")] = None
    """IAM lifecycle hook: ``runtime-identities`` (unset: none)."""

    iam_identity_root: Annotated[str, Variable("OCC_IAM_IDENTITY_ROOT")] = ".occ/identities"
    """Ledger of the runtime identities the IAM hook issued (shared by the workers)."""

    account_backend: Annotated[str | None, Variable("OCC_ACCOUNT_BACKEND")] = None
    """Account Backend that issues managed accounts: ``standin`` (unset: none, and a
    ``managedAccount`` harness source is refused).

    ``standin`` keeps its accounts in ``account_backend_root`` and is for development and tests;
    production refuses it."""

    account_backend_root: Annotated[str, Variable("OCC_ACCOUNT_BACKEND_ROOT")] = ".occ/accounts"
    """Directory of the ``standin`` account Backend (shared by the API and the workers)."""
