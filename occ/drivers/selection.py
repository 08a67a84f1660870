"""Startup selection of the Installation's drivers and of the lifecycle hook owners.

Trusted startup configuration (``Settings``) names the Compute Driver, the Configuration
Driver, the optional Sandbox Driver and IAM hook, and, in order, the drivers that own
lifecycle hooks (``lifecycle_hook_owners``; unset: the selected ones that have hooks, in the
order configuration, sandbox, iam). ``select`` builds each selected owner once, from its own
settings only (never the whole ``Settings``, which holds keys), registers them in a
``HookDispatcher`` (identity and callbacks captured then) and hands that to the Compute Driver
when it is built, before its first operation. Anything unavailable fails closed: an unknown or
repeated owner, an owner whose driver is not selected, a selected Sandbox Driver or IAM hook
left out of an explicit order, a driver that cannot own hooks, an owner missing a stage. The
error names the setting and never a value it could not use. (The Secret Driver is chosen by
``occ.runtime.composition``: its default implementation belongs to the state layer.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from occ.drivers import compute
from occ.drivers.account import AccountBackend
from occ.drivers.account import standin as standin_accounts
from occ.drivers.compute import base, hooks
from occ.drivers.configuration import ConfigurationDriver
from occ.drivers.configuration import database as configuration_database
from occ.drivers.configuration import filesystem as configuration_filesystem
from occ.drivers.iam import identities
from occ.drivers.sandbox import reference
from occ.foundation import errors
from occ.settings.config import Settings

CONFIGURATION_DRIVERS: Final = (
    configuration_database.DRIVER_ID,
    configuration_filesystem.DRIVER_ID,
)
SANDBOX_DRIVERS: Final = (reference.DRIVER_ID,)
IAM_HOOKS: Final = (identities.DRIVER_ID,)
ACCOUNT_BACKENDS: Final = (standin_accounts.DRIVER_ID,)
OWNER_ORDER: Final = ("configuration", "sandbox", "iam")
"""Capabilities that may own hooks, in the default selection order."""


@dataclass(frozen=True)
class Selection:
    """The drivers one process runs with, built once at startup."""

    compute_driver: str
    configuration: ConfigurationDriver
    sandbox: reference.ReferenceSandbox | None
    dispatcher: hooks.HookDispatcher
    accounts: AccountBackend | None = None
    """The account Backend that issues managed accounts (``None``: none is selected)."""

    @property
    def sandbox_driver(self) -> str | None:
        """The selected Sandbox Driver's id (``None`` without one)."""
        return None if self.sandbox is None else self.sandbox.id

    @property
    def hook_owners(self) -> tuple[str, ...]:
        """The hook owners' identities, in selection order."""
        return self.dispatcher.owners


def select(settings: Settings) -> Selection:
    """Build the selected drivers, the hook owners and their dispatcher; ``InvalidSettings`` when
    one is unavailable."""
    configuration = _configuration(settings)
    sandbox = _sandbox(settings)
    available: dict[str, hooks.LifecycleHooks] = {}
    if sandbox is not None:
        available["sandbox"] = sandbox
    if settings.iam_hook is not None:
        available["iam"] = _iam_hook(settings)
    order = _order(settings.lifecycle_hook_owners, available)
    try:
        dispatcher = hooks.HookDispatcher([available[capability] for capability in order])
    except hooks.OwnerInvalid as exc:
        raise errors.InvalidSettings.at(("lifecycle_hook_owners",), str(exc)) from None
    return Selection(
        compute_driver=settings.compute_driver,
        configuration=configuration,
        sandbox=sandbox,
        dispatcher=dispatcher,
        accounts=account_backend(settings),
    )


def compute_driver(settings: Settings, selection: Selection) -> base.ComputeDriver:
    """The selected Compute Driver with the selection's hooks attached (once, at build)."""
    return compute.load(settings.compute_driver, settings, hooks=selection.dispatcher)


def account_backend(settings: Settings) -> AccountBackend | None:
    """The selected account Backend, or ``None``; the stand-in only outside production."""
    if settings.account_backend is None:
        return None
    if settings.account_backend not in ACCOUNT_BACKENDS:
        raise _unknown("account_backend", "account Backend", ACCOUNT_BACKENDS)
    _development_only(settings, "account_backend", "the standin account Backend")
    return standin_accounts.StandinBackend(Path(settings.account_backend_root).resolve())


def _configuration(settings: Settings) -> ConfigurationDriver:
    """The Configuration Driver (none of today's has lifecycle hooks)."""
    chosen = settings.configuration_driver
    if chosen == configuration_database.DRIVER_ID:
        return configuration_database.DATABASE
    if chosen != configuration_filesystem.DRIVER_ID:
        raise _unknown("configuration_driver", "Configuration Driver", CONFIGURATION_DRIVERS)
    _development_only(settings, "configuration_driver", "the filesystem Configuration Driver")
    if not settings.development_configuration_root:
        raise errors.InvalidSettings.at(
            ("development_configuration_root",), "the filesystem Configuration Driver needs it"
        )
    root = Path(settings.development_configuration_root).resolve()
    return configuration_filesystem.FilesystemConfigurations(root)


def _sandbox(settings: Settings) -> reference.ReferenceSandbox | None:
    if settings.sandbox_driver is None:
        if settings.sandbox_egress_allow is not None:
            raise errors.InvalidSettings.at(
                ("sandbox_egress_allow",), "is set but no sandbox driver is selected"
            )
        return None
    if settings.sandbox_driver not in SANDBOX_DRIVERS:
        raise _unknown("sandbox_driver", "sandbox driver", SANDBOX_DRIVERS)
    try:
        return reference.ReferenceSandbox(settings.sandbox_egress_allow or ())
    except ValueError as exc:
        raise errors.InvalidSettings.at(("sandbox_egress_allow",), str(exc)) from None


def _iam_hook(settings: Settings) -> identities.RuntimeIdentities:
    if settings.iam_hook not in IAM_HOOKS:
        raise _unknown("iam_hook", "IAM hook", IAM_HOOKS)
    return identities.RuntimeIdentities(Path(settings.iam_identity_root).resolve())


def _unknown(field: str, what: str, known: Iterable[str]) -> errors.InvalidSettings:
    """The error of the setting ``field`` naming none of the ``known`` choices of ``what``."""
    return errors.InvalidSettings.at((field,), f"unknown {what}; known: {', '.join(known)}")


def _development_only(settings: Settings, field: str, what: str) -> None:
    """Refuse ``what``, the stand-in the setting ``field`` selects, in production."""
    if settings.environment == "production":
        raise errors.InvalidSettings.at((field,), f"{what} is for development")


def _order(configured: str | None, available: dict[str, hooks.LifecycleHooks]) -> tuple[str, ...]:
    """The owners' capabilities in selection order, checked against what is selected."""
    if configured is None:
        return tuple(capability for capability in OWNER_ORDER if capability in available)
    path: errors.Path = ("lifecycle_hook_owners",)
    order = tuple(part.strip() for part in configured.split(",") if part.strip())
    for capability in order:
        if capability not in OWNER_ORDER:
            raise errors.InvalidSettings.at(
                path, f"names an unknown hook owner; known: {', '.join(OWNER_ORDER)}"
            )
        if capability not in available:
            raise errors.InvalidSettings.at(
                path, f"{capability} owns hooks but no {capability} driver is selected"
            )
    if len(set(order)) != len(order):
        raise errors.InvalidSettings.at(path, "names an owner twice")
    left_out = [capability for capability in available if capability not in order]
    if left_out:
        raise errors.InvalidSettings.at(
            path, f"leaves out the selected {', '.join(left_out)} driver, whose hooks must run"
        )
    return order
