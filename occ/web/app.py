"""The Flask application factory: blueprints, strict input, problem+json, request ids, logs.

``gunicorn "occ.web.app:create_app()"`` builds one app per worker process from the
environment; tests pass ``Settings``. There is no module-level app.
"""

from __future__ import annotations

import http
import re
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, ParamSpec, TypeVar

import flask
import flask_smorest
import flask_smorest.utils

from occ.drivers import selection as driver_selection
from occ.drivers.identity import oidc, providers
from occ.drivers.secret import SecretDriver
from occ.foundation import errors
from occ.runtime import composition
from occ.settings.config import Settings
from occ.tasks import app as tasks_app
from occ.tasks import lifecycle, nudge
from occ.telemetry import metrics, observability
from occ.web import (
    access,
    documentation,
    idempotency,
    json_input,
    namespace_visibility,
    preconditions,
    problems,
    query_parameters,
    rate_limits,
)
from occ.web.console import pages as console_pages
from occ.web.routes import BROWSER_MODULES, ROUTE_MODULES
from occ.web.schemas import common

MAX_BODY_BYTES: Final = 256 * 1024
EXIT_WORKER_BOOT_ERROR: Final = 3
"""Exit status of a gunicorn worker that cannot boot (gunicorn then stops)."""
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class WebContext:
    """What views need, stored in ``app.extensions["occ"]``."""

    runtime: composition.Runtime
    nudger: nudge.Nudger
    drivers: driver_selection.Selection
    secrets: SecretDriver
    sign_in: dict[str, oidc.Client]


def create_app(
    settings: Settings | None = None, *, nudger: nudge.Nudger | None = None
) -> flask.Flask:
    """Build the API for ``settings`` (from the environment when not given)."""
    built = composition.build(
        settings or _settings_from_env(), pool_size=10, application_name="occ-api"
    )
    observability.configure("occ-api", built.settings.log_level)
    app = flask.Flask("occ", static_folder=None)
    app.config.update(
        MAX_CONTENT_LENGTH=MAX_BODY_BYTES,
        JSON_SORT_KEYS=False,
        API_TITLE="occ",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/v1",
        OPENAPI_JSON_PATH="openapi.json",
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["occ"] = WebContext(
        runtime=built,
        nudger=nudger or nudge.Nudger(tasks_app.create(built.settings)),
        sign_in=_sign_in_clients(built.settings),
        **_selected_drivers(built.settings),
    )
    api = _Api(
        app,
        spec_kwargs={
            "info": {
                "description": "OpenClaw Control Plane: admits intent; workers reconcile it.",
                "contact": {"name": "occ maintainers"},
                "license": {
                    "name": "Apache-2.0",
                    "url": "https://www.apache.org/licenses/LICENSE-2.0",
                },
            },
            "servers": [
                {"url": "/", "description": "the API that serves this document"},
                {"url": "http://127.0.0.1:8000", "description": "occ dev's default address"},
            ],
        },
    )
    api.spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    api.spec.components.security_scheme(
        "session", {"type": "apiKey", "in": "cookie", "name": "occ_session"}
    )
    api.spec.options["security"] = [{"bearer": []}, {"session": []}]
    for module in ROUTE_MODULES:
        documentation.document(module)
        api.register_blueprint(module.blueprint)
    for browser_module in BROWSER_MODULES:
        app.register_blueprint(browser_module.blueprint)
    app.register_blueprint(console_pages.blueprint)
    # flask-smorest's own pagination schema: occ pages with meta.nextCursor, never uses it
    api.spec.components.schemas.pop("PaginationMetadata", None)
    problem = api.spec.components.schemas["Problem"]["properties"]
    problem["code"]["enum"] = problems.known_codes()
    problem["status"]["enum"] = problems.known_statuses()
    _make_public(app, "api-docs.openapi_json")
    _make_public(app, "console.static")
    problems.register(app)
    rate_limits.install(app, built.settings)
    app.extensions[json_input.BODY_ERROR_CHECK] = namespace_visibility.refuse_unseen
    app.before_request(_begin)
    app.before_request(rate_limits.limit_address)
    app.before_request(access.authenticate_request)
    app.before_request(rate_limits.limit_principal)
    app.before_request(query_parameters.refuse_unknown)
    app.before_request(preconditions.check_if_match)
    app.before_request(idempotency.claim_or_replay)
    app.after_request(_finish)
    app.after_request(rate_limits.tell_remaining)
    app.after_request(idempotency.record_outcome)
    app.after_request(preconditions.tag_response)  # after_request runs last-registered first
    return app


def _selected_drivers(settings: Settings) -> dict[str, Any]:
    """The drivers the startup configuration selects; an unavailable one ends the process with
    one line (like invalid settings): the API fails closed before its first request."""
    try:
        return {
            "drivers": driver_selection.select(settings),
            "secrets": composition.secret_driver(settings),
        }
    except errors.OccError as exc:
        print(f"occ-api: error: {exc.code}: {lifecycle.startup_reason(exc)}", file=sys.stderr)
        raise SystemExit(EXIT_WORKER_BOOT_ERROR) from None


def _sign_in_clients(settings: Settings) -> dict[str, oidc.Client]:
    """The configured sign-in providers' flows, redirecting back to ``OCC_AUTH_BASE_URL``."""
    base = (settings.auth_base_url or "").rstrip("/")
    return {
        provider.name: oidc.Client(provider, redirect_uri=f"{base}/auth/callback/{provider.name}")
        for provider in providers.configured(settings)
    }


def _settings_from_env() -> Settings:
    """The settings of a gunicorn worker; invalid ones end it with one line, no traceback.

    The exit status is gunicorn's "worker failed to boot", which stops the whole server
    rather than booting worker after worker.
    """
    try:
        return Settings.from_env()
    except errors.OccError as exc:
        print(f"occ-api: error: {exc.code}: {lifecycle.startup_reason(exc)}", file=sys.stderr)
        raise SystemExit(EXIT_WORKER_BOOT_ERROR) from None


class _Api(flask_smorest.Api):  # type: ignore[misc]
    """flask-smorest documenting errors as the API answers them: problem+json."""

    ERROR_SCHEMA = common.Problem

    def _register_responses(self) -> None:
        for status in http.HTTPStatus:
            response: dict[str, Any] = {"description": status.phrase}
            if not 100 <= status < 200 and status not in (204, 304):
                response["schema"] = self.ERROR_SCHEMA
            flask_smorest.utils.prepare_response(response, self.spec, problems.CONTENT_TYPE)
            self.spec.components.response(status.name, response, lazy=True)
        response = {"description": "Default error response", "schema": self.ERROR_SCHEMA}
        flask_smorest.utils.prepare_response(response, self.spec, problems.CONTENT_TYPE)
        self.spec.components.response("DEFAULT_ERROR", response, lazy=True)


def _make_public(app: flask.Flask, endpoint: str) -> None:
    """Declare the view of ``endpoint`` public, on a function of its own (the view may be a
    bound method, which takes no declaration)."""
    view: Callable[..., Any] = app.view_functions[endpoint]
    app.view_functions[endpoint] = access.public(_forwarding(view))


def _forwarding(view: Callable[P, R]) -> Callable[P, R]:
    """A new function that calls ``view`` with what it is called with."""

    def forwarded(*args: P.args, **kwargs: P.kwargs) -> R:
        return view(*args, **kwargs)

    return forwarded


def _begin() -> None:
    flask.g.started = time.perf_counter()
    incoming = flask.request.headers.get("X-Request-Id", "")
    flask.g.request_id = incoming if _REQUEST_ID.fullmatch(incoming) else f"req_{uuid.uuid4()}"


def _hold_until_floor(started: float) -> None:
    """Answer a 404 no sooner than ``Settings.api_not_found_floor_ms`` after the request began:
    a resource the caller may not see (authorized, then counted in the audit) and one that
    does not exist then take the same time, so the answer's timing tells them apart no more
    than its body does. Under gevent the wait holds a greenlet, not a worker."""
    floor_s = flask.current_app.extensions["occ"].runtime.settings.api_not_found_floor_ms / 1000
    remaining = started + floor_s - time.perf_counter()
    if remaining > 0:
        time.sleep(remaining)


def _finish(response: flask.Response) -> flask.Response:
    response.headers["X-Request-Id"] = flask.g.get("request_id", "")
    rule = flask.request.url_rule
    started = flask.g.get("started", time.perf_counter())
    if response.status_code == 404 and flask.g.get("principal_id") is not None:
        _hold_until_floor(started)
    fields: dict[str, Any] = {
        "requestId": flask.g.get("request_id"),
        "method": flask.request.method,
        "route": rule.rule if rule is not None else None,
        "status": response.status_code,
        "durationMs": round((time.perf_counter() - started) * 1000, 2),
        "principalId": flask.g.get("principal_id"),
    }
    observability.log("http.completed", **fields)
    route = fields["route"] or "unmatched"
    metrics.HTTP_REQUESTS.labels(flask.request.method, route, str(response.status_code)).inc()
    metrics.HTTP_DURATION.labels(flask.request.method, route).observe(time.perf_counter() - started)
    return response
