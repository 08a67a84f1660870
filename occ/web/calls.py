"""How a view calls its use case: on the application's database, as the authenticated caller.

Every use case a view calls takes the database and the caller first; what follows is what the
view parsed from the request: a change's command value (``agents.CreateAgent``), or the ids a
read needs. The helpers pass those on as the use case declares them (a ``ParamSpec``), so mypy
checks each view's call against its use case's own signature. ``call`` answers the use case's
value, ``item`` that value in the ``data`` envelope, ``admitted`` likewise for a use case that
enqueued work, after nudging the workers, and ``page`` the list page the query asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import flask

from occ.drivers import selection
from occ.drivers.identity import oidc
from occ.drivers.secret import SecretDriver
from occ.runtime import composition
from occ.state import keyset, quotas
from occ.state.db import Database
from occ.tasks import nudge
from occ.web import access, pagination
from occ.web.schemas import common

P = ParamSpec("P")
T = TypeVar("T")


class Context(Protocol):
    """The application's ``occ`` extension: its runtime, its work nudger, and the drivers the
    startup configuration selected."""

    @property
    def runtime(self) -> composition.Runtime: ...

    @property
    def nudger(self) -> nudge.Nudger: ...

    @property
    def drivers(self) -> selection.Selection: ...

    @property
    def secrets(self) -> SecretDriver: ...

    @property
    def sign_in(self) -> dict[str, oidc.Client]: ...


def context() -> Context:
    """The application's ``occ`` extension."""
    extension: Context = flask.current_app.extensions["occ"]
    return extension


def quota_defaults() -> quotas.Counts:
    """The installation's default quotas (``OCC_QUOTA_*``)."""
    settings = context().runtime.settings
    return quotas.Counts(
        agents=settings.quota_agents,
        revisions_per_agent=settings.quota_revisions_per_agent,
        secrets=settings.quota_secrets,
        configurations=settings.quota_configurations,
    )


def call(
    use_case: Callable[Concatenate[Database, str, P], T], /, *args: P.args, **kwargs: P.kwargs
) -> T:
    """``use_case(database, <the caller>, *args, **kwargs)``."""
    return use_case(context().runtime.database, access.principal_id(), *args, **kwargs)


def item(
    use_case: Callable[Concatenate[Database, str, P], object], /, *args: P.args, **kwargs: P.kwargs
) -> dict[str, Any]:
    """The use case's value in the ``data`` envelope."""
    return common.wrap(call(use_case, *args, **kwargs))


def admitted(
    use_case: Callable[Concatenate[Database, str, P], object], /, *args: P.args, **kwargs: P.kwargs
) -> dict[str, Any]:
    """Like ``item``, for a use case that enqueued work: the workers are nudged to claim it."""
    value = call(use_case, *args, **kwargs)
    context().nudger.nudge()
    return common.wrap(value)


def page(
    use_case: Callable[Concatenate[Database, str, keyset.Window, P], keyset.Page[Any]],
    query: dict[str, Any],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> dict[str, Any]:
    """The page of a list in creation order that the ``limit`` and ``cursor`` of ``query`` ask
    for (the use case takes the rows to read after the caller)."""
    window = pagination.window(query, pagination.BY_CREATION)
    return pagination.page(call(use_case, window, *args, **kwargs))
