"""The console's pages: sign-in, Namespaces, a Namespace's Agents, an Agent with its
revisions and deployment progress, audit events and work items.

Pages read through the use cases as the signed-in principal (what it may not read it does not
see); a page the caller may not open answers a 403 page. Actions are the script's
(``static/console.js``): it sends them to the JSON API. Every answer carries a strict
Content-Security-Policy (scripts and styles of this origin only, no inline script, no
framing).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Generic, TypeVar

import flask

from occ.controller import (
    access_bindings,
    agents,
    authorization_checks,
    configurations,
    installation,
    namespaces,
    operations,
    principals,
    revision_reads,
    roles,
    secrets,
)
from occ.foundation import errors, harnesses
from occ.state import audit, iam_policy, keyset, values
from occ.web import access, calls, cookies, query_parameters

blueprint = flask.Blueprint(
    "console",
    __name__,
    url_prefix="/console",
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_LIST_LIMIT: Final = keyset.Window(limit=200)
_Choice = TypeVar("_Choice", bound=enum.StrEnum)


@blueprint.after_request
def _harden(response: flask.Response) -> flask.Response:
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    if flask.request.endpoint != "console.static":
        response.headers["Cache-Control"] = "no-store"
    return response


@blueprint.errorhandler(errors.Unauthenticated)
def _sign_in_first(error: errors.Unauthenticated) -> flask.Response:
    target = urllib.parse.quote(flask.request.full_path.rstrip("?"), safe="/")
    response = flask.Response(status=303)
    response.headers["Location"] = f"/console/sign-in?next={target}"
    return response


@blueprint.errorhandler(errors.Forbidden)
def _forbidden(error: errors.Forbidden) -> tuple[str, int]:
    return _render("error.html", {"title": "Not allowed", "message": error.detail}), 403


@blueprint.errorhandler(errors.NotFound)
def _not_found(error: errors.NotFound) -> tuple[str, int]:
    return _render("error.html", {"title": "Not found", "message": error.detail}), 404


@blueprint.route("/sign-in", methods=["GET"])
@access.public
@query_parameters.accepts("next", "error")
def sign_in() -> str:
    """The providers to sign in with."""
    next_path = flask.request.args.get("next", "/console")
    listed = [
        {
            "label": client.provider.label,
            "href": "/auth/sign-in/"
            + client.provider.name
            + "?"
            + urllib.parse.urlencode({"next": next_path}),
        }
        for client in calls.context().sign_in.values()
    ]
    return _render("sign_in.html", {"title": "Sign in", "providers": listed})


@blueprint.route("", methods=["GET"])
@access.authenticated
def home() -> flask.Response:
    response = flask.Response(status=303)
    response.headers["Location"] = "/console/namespaces"
    return response


@blueprint.route("/namespaces", methods=["GET"])
@access.authenticated
def namespace_list() -> str:
    listed = calls.call(namespaces.list_namespaces, _LIST_LIMIT)
    installation_id = installation.installation_id(calls.context().runtime.database)
    may = {"create": _may("namespace:create", "installation", installation_id, None)}
    for namespace in listed:
        may[namespace.id] = _may("namespace:delete", "namespace", namespace.id, namespace.id)
    return _render("namespaces.html", {"title": "Namespaces", "namespaces": listed, "may": may})


@blueprint.route("/namespaces/<namespace_id>", methods=["GET"])
@access.authenticated
def namespace_page(namespace_id: str) -> str:
    namespace = calls.call(namespaces.get_namespace, namespace_id=namespace_id)
    agent_list = calls.call(agents.list_agents, _LIST_LIMIT, namespace_id=namespace_id)
    configuration_list = _or_empty(
        lambda: calls.call(
            configurations.list_configurations,
            _LIST_LIMIT,
            namespace_id=namespace_id,
            store=calls.context().drivers.configuration,
        )
    )
    secret_list = _or_empty(
        lambda: calls.call(secrets.list_secrets, _LIST_LIMIT, namespace_id=namespace_id)
    )
    return _render(
        "namespace.html",
        {
            "title": namespace.name,
            "namespace": namespace,
            "agents": agent_list,
            "configurations": configuration_list,
            "secrets": secret_list,
            "may": {
                action: _may(f"{action}:create", "namespace", namespace_id, namespace_id)
                for action in ("agent", "configuration", "secret")
            },
            "harnesses": [
                {"id": str(harness), "mode": str(harnesses.MODES[harness])}
                for harness in harnesses.Harness
            ],
        },
    )


@blueprint.route("/namespaces/<namespace_id>/agents/<agent_id>", methods=["GET"])
@access.authenticated
@query_parameters.accepts("deployment")
def agent_page(namespace_id: str, agent_id: str) -> str:
    namespace = calls.call(namespaces.get_namespace, namespace_id=namespace_id)
    agent = calls.call(agents.get_agent, namespace_id=namespace_id, agent_id=agent_id)
    revisions = _or_empty(
        lambda: calls.call(
            revision_reads.list_revisions,
            keyset.Window(limit=50),
            namespace_id=namespace_id,
            agent_id=agent_id,
        )
    )
    deployment = flask.request.args.get("deployment", "")
    return _render(
        "agent.html",
        {
            "title": agent.name,
            "namespace": namespace,
            "agent": agent,
            "revisions": revisions,
            "may": {
                action: _may(f"agent:{action}", "agent", agent_id, namespace_id)
                for action in ("deploy", "operate", "delete", "read_logs")
            },
            "deployment": deployment if deployment.isascii() and len(deployment) < 100 else "",
        },
    )


@dataclasses.dataclass(frozen=True)
class _Filters(Generic[_Choice]):
    """A ledger page's filters from its query: the Namespace, and one of the ``choices`` of the
    filter ``name`` (the event kind, the work state), in the order the form lists them."""

    name: str
    choices: Sequence[_Choice]
    namespace_id: str | None
    value: _Choice | None

    @classmethod
    def chosen(cls, name: str, choices: Sequence[_Choice], unknown: str) -> _Filters[_Choice]:
        """The query's ``namespace`` and ``name``; ``NotFound`` (saying ``unknown``) for a
        ``name`` that is not one of ``choices``."""
        namespace_id = flask.request.args.get("namespace") or None
        given = flask.request.args.get(name) or None
        value = next((choice for choice in choices if choice == given), None)
        if given is not None and value is None:
            raise errors.NotFound(unknown)
        return cls(name, choices, namespace_id, value)


def _ledger_page(
    path: str, name: str, choices: Sequence[_Choice], unknown: str
) -> Callable[[Callable[[_Filters[_Choice]], str]], Callable[[], str]]:
    """Route ``GET path`` to a ledger page any signed-in caller may open: its query is the
    ``namespace`` and the filter ``name`` (one of ``choices``; ``unknown`` refuses another),
    which the view is given as its ``_Filters``."""

    def declare(view: Callable[[_Filters[_Choice]], str]) -> Callable[[], str]:
        @functools.wraps(view)
        def filtered() -> str:
            return view(_Filters.chosen(name, choices, unknown))

        accepted = query_parameters.accepts("namespace", name)(filtered)
        return blueprint.route(path, methods=["GET"])(access.authenticated(accepted))

    return declare


@_ledger_page("/audit", "kind", sorted(audit.EventKind), "no such audit event kind")
def audit_page(filters: _Filters[audit.EventKind]) -> str:
    page = calls.call(
        operations.list_audit_events,
        operations.AuditFilter(namespace_id=filters.namespace_id, kind=filters.value, limit=100),
    )
    return _render(
        "audit.html", {"title": "Audit events", "events": page.items, "filters": filters}
    )


@_ledger_page("/work", "state", list(values.WorkState), "no such work state")
def work_page(filters: _Filters[values.WorkState]) -> str:
    page = calls.call(
        operations.list_work,
        operations.WorkFilter(namespace_id=filters.namespace_id, state=filters.value),
    )
    return _render("work.html", {"title": "Work items", "items": page, "filters": filters})


@blueprint.route("/people", methods=["GET"])
@access.authenticated
def people_page() -> str:
    """Principals (with minting an API key), their live API keys (to revoke), Roles and
    bindings (Installation-wide or in a Namespace), for administrators of the Installation
    (403 else)."""
    principal_list = calls.call(principals.list_principals, _LIST_LIMIT)
    role_list = calls.call(roles.list_roles, _LIST_LIMIT)
    binding_list = calls.call(access_bindings.list_bindings, _LIST_LIMIT)
    namespace_list = calls.call(namespaces.list_namespaces, _LIST_LIMIT)
    keys = [
        key
        for principal in principal_list
        if principal.agent_id is None
        for key in calls.call(principals.list_api_keys, _LIST_LIMIT, principal_id=principal.id)
        if key.revoked_at is None
    ]
    return _render(
        "people.html",
        {
            "title": "People and access",
            "principals": principal_list,
            "keys": keys,
            "roles": role_list,
            "bindings": binding_list,
            "namespaces": namespace_list,
            "names": {p.id: p.name for p in principal_list}
            | {r.id: r.name for r in role_list}
            | {n.id: n.name for n in namespace_list},
        },
    )


def _may(permission: str, kind: str, resource_id: str, namespace_id: str | None) -> bool:
    """Whether the signed-in principal holds ``permission`` on the resource now (the API's
    authorization check): the page disables an action it would refuse."""
    question = authorization_checks.Check(
        permission=permission,
        resource=iam_policy.ResourceRef(kind, resource_id),
        namespace_id=None if kind == "installation" else namespace_id,
    )
    try:
        return calls.call(authorization_checks.check, question).allowed
    except (errors.Forbidden, errors.NotFound):
        return False


def _or_empty(read: Any) -> list[Any]:
    """What ``read`` lists, or nothing when the caller may not list it."""
    try:
        return list(read())
    except (errors.Forbidden, errors.NotFound):
        return []


def _render(template: str, context: Mapping[str, object]) -> str:
    """The console page ``template`` with ``context`` and what every page shows (the CSRF
    token, who is signed in)."""
    settings = calls.context().runtime.settings
    session_id = access.session_id()
    csrf = (
        cookies.csrf_token(settings.auth_secret, session_id)
        if session_id is not None and settings.auth_secret
        else ""
    )
    principal = flask.g.get("principal_id")
    return flask.render_template(
        f"console/{template}",
        csrf_token=csrf,
        principal_id=principal,
        signed_in=principal is not None,
        **context,
    )
