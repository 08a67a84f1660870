"""The client's entry: ``register`` adds its commands to ``occ``; login, config and can-i.

``occ login`` checks the key against the API before it writes the profile, or with
``--browser`` signs a person in (``occ.client.browser_login``); ``occ logout`` revokes a CLI
token and forgets the credential. ``occ auth can-i``
asks ``POST /v1/authorization-checks`` and exits 0 for yes, 1 for no. The resource commands are
in ``occ.client.resources`` and ``occ.client.agents``, work and audit in ``occ.client.ledgers``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import click

from occ.client import (
    agent_logs,
    agents,
    browser_login,
    http,
    ledgers,
    profile,
    quotas,
    resources,
    waiting,
    wire,
)
from occ.client import session as shared

_KINDS: Final = {
    "ns": "namespace",
    "cfg": "configuration",
    "sec": "secret",
    "acc": "account",
    "agt": "agent",
    "rev": "agent_revision",
    "ins": "installation",
}


@click.command()
@click.option("--url", required=True, help="The API's base URL (http:// or https://).")
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the API key (occ_<keyId>_<secret>).",
)
@click.option(
    "--browser", is_flag=True, help="Sign in as a person through the browser instead of a key."
)
@click.option("--provider", default=None, help="With --browser: the sign-in provider's name.")
@click.option(
    "--no-open", is_flag=True, help="With --browser: print the sign-in URL, open no browser."
)
@click.option(
    "--timeout",
    type=click.FloatRange(1, 3600),
    default=300.0,
    show_default=True,
    help="With --browser: seconds to wait for the browser to come back.",
)
def login(
    url: str,
    key_file: Path | None,
    *,
    browser: bool,
    provider: str | None,
    no_open: bool,
    timeout: float,
) -> None:
    """Keep the API's URL and a credential in the profile (mode 0600): an API key, checked
    against the API, or with --browser a CLI token of the person who signs in."""
    environ = shared.session_of(click.get_current_context()).environ
    if browser == (key_file is not None):
        raise click.UsageError("give either --key-file FILE or --browser")
    try:
        if key_file is None:
            client = http.Client(http.check_url(url), "", via_proxy=wire.proxied(environ))
            signed_in = browser_login.sign_in(
                client,
                browser_login.provider_of(client, provider),
                lambda link: _show_sign_in(link, open_browser=not no_open),
                timeout_s=timeout,
            )
            key = signed_in.token
            who = f" as {signed_in.principal_id} (token {signed_in.session_id})"
        else:
            key = profile.check_key(_read_key(key_file))
            client = http.Client(http.check_url(url), key, via_proxy=wire.proxied(environ))
            client.get(shared.path("namespaces"))  # 401 for a key the API does not know
            who = ""
        where = profile.save(environ, profile.Profile(client.url, key))
    except profile.ProfileFileError as error:
        shared.fail(error.code, str(error))
    except profile.ProfileError as error:
        shared.fail("INVALID_KEY", str(error))
    except http.ApiError as error:
        shared.fail(error.code, error.message)
    except OSError as error:  # the browser sign-in's listener
        shared.fail("OS_ERROR", shared.os_error(error))
    click.echo(f"logged in to {client.url}{who} (profile {where})")
    shared.hint("occ namespaces create NAME --wait")


def _read_key(key_file: Path) -> str:
    try:
        return key_file.read_text(encoding="utf-8")
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) else None
        shared.fail("INVALID_FILE", f"cannot read {key_file}: {reason or type(error).__name__}")


def _show_sign_in(link: str, *, open_browser: bool) -> None:
    click.echo(f"sign in at: {link}", err=True)
    if open_browser:
        import webbrowser  # noqa: PLC0415 - only this command needs it

        webbrowser.open(link)


@click.command()
@shared.pass_session
def logout(session: shared.Session) -> None:
    """Forget the profile's credential; a CLI token (occ login --browser) is revoked first,
    so it stops working everywhere. An API key is only forgotten (its administrator revokes
    it)."""
    try:
        loaded = session.profile
        session_id = profile.cli_session_of(loaded.key)
        if session_id is not None:
            _revoke_own(session.client, session_id)
        where = profile.forget_key(session.environ)
    except profile.ProfileError as error:
        shared.fail(error.code, str(error))
    except http.ApiError as error:
        shared.fail(error.code, error.message)
    ended = "revoked and forgotten" if session_id is not None else "forgotten (not revoked)"
    click.echo(f"logged out of {loaded.url}: the credential was {ended} (profile {where})")


def _revoke_own(client: http.Client, session_id: str) -> None:
    try:
        client.delete(shared.path("sessions", session_id))
    except http.ApiError as error:
        if error.status != 401:  # a token that no longer works is already logged out
            raise


@click.group(cls=shared.ClientGroup)
def config() -> None:
    """Read and set the profile: the default Namespace (the URL and key come from login)."""


@config.command("set")
@click.argument("name", type=click.Choice(profile.SETTABLE))
@click.argument("value")
@shared.pass_session
def config_set(session: shared.Session, name: str, value: str) -> None:
    """Set a profile setting, e.g. the Namespace of commands given no -n."""
    where = profile.set_field(session.environ, name, value)
    click.echo(f"{name} set to {value} (profile {where})")


@config.command("unset")
@click.argument("name", type=click.Choice(profile.SETTABLE))
@shared.pass_session
def config_unset(session: shared.Session, name: str) -> None:
    """Remove a profile setting."""
    where = profile.set_field(session.environ, name, None)
    click.echo(f"{name} unset (profile {where})")


@config.command("view")
@shared.output_option
@shared.pass_session
def config_view(session: shared.Session, form: str) -> None:
    """The profile in use: URL, default Namespace and where it is kept (never the key)."""
    loaded = session.profile
    shared.show(
        {
            "url": loaded.url,
            "namespace": loaded.namespace,
            "profile": str(profile.path(session.environ)),
        },
        "table" if form in ("wide", "name") else form,
    )


@click.command()
@click.argument("shell", type=click.Choice(("bash", "zsh", "fish")))
def completion(shell: str) -> None:
    """Print the shell completion script: eval "$(occ completion bash)" (or zsh, fish)."""
    from click import shell_completion  # noqa: PLC0415 - only this command needs it

    root = click.get_current_context().find_root()
    assert isinstance(root.command, click.Command)
    script = shell_completion.get_completion_class(shell)
    assert script is not None
    click.echo(script(root.command, {}, "occ", "_OCC_COMPLETE").source())


@click.group(cls=shared.ClientGroup)
def auth() -> None:
    """Ask what current policy allows."""


@auth.command("can-i")
@click.argument("permission")
@click.argument("resource")
@click.option(
    "-n",
    "--namespace",
    default=None,
    help="The resource's Namespace (id or name; default: the profile's).",
)
@click.option("--as", "principal", default=None, help="Ask for this principal (an admin's).")
@shared.output_option
@shared.pass_session
def can_i(
    session: shared.Session,
    *,
    permission: str,
    resource: str,
    namespace: str | None,
    principal: str | None,
    form: str,
) -> None:
    """May I (or --as PRINCIPAL) use PERMISSION on RESOURCE? Exit 0 yes, 1 no.

    RESOURCE is KIND/ID or an id (its prefix names the kind), or "installation".
    """
    kind, resource_id = _resource(session, resource)
    body: dict[str, Any] = {"permission": permission, "resource": {"kind": kind, "id": resource_id}}
    if kind not in ("installation", "namespace"):
        body["namespaceId"] = shared.namespace_id(session, namespace)
    if principal is not None:
        body["principalId"] = principal
    answer = session.client.post(shared.path("authorization-checks"), body).data
    if form == "table":
        click.echo("yes" if answer["allowed"] else f"no ({answer['reason']})")
    else:
        shared.show(answer, form)
    raise click.exceptions.Exit(waiting.EXIT_OK if answer["allowed"] else waiting.EXIT_FAILED)


def _resource(session: shared.Session, text: str) -> tuple[str, str]:
    if text == "installation":
        return "installation", str(session.get(shared.path("installation"))["id"])
    kind, slash, resource_id = text.partition("/")
    if slash:
        return kind, resource_id
    prefix = text.split("_", 1)[0]
    if prefix not in _KINDS:
        raise click.UsageError(f"cannot tell the kind of {text!r}: write KIND/ID")
    return _KINDS[prefix], text


def register(group: click.Group) -> None:
    """Add the client's commands to the ``occ`` group."""
    agents.agents.add_command(agent_logs.agent_logs)
    resources.namespaces.add_command(quotas.quotas)
    for command in (
        login,
        logout,
        config,
        completion,
        resources.namespaces,
        resources.configurations,
        resources.secrets,
        agents.agents,
        agents.deployments,
        ledgers.work,
        ledgers.audit,
        auth,
    ):
        group.add_command(command)
