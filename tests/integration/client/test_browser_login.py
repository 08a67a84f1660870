"""``occ login --browser`` end to end: the API under gunicorn with a real OpenID Connect
provider, the ``occ`` client as a subprocess listening on its loopback port, and the test
playing the browser (following the redirects with an HTTP client). The stored CLI token
works, stops working once revoked, and ``occ logout`` revokes it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.integration.client.conftest import Installed, Operator, Ran, api
from tests.support import oidc_provider, servers

AUTH_SECRET = "a-sign-in-secret-of-the-client-tests"


@pytest.fixture
def signing_in(
    environment: dict[str, str],
    installed: Installed,
    tmp_path: Path,
    provider: oidc_provider.Provider,
) -> Iterator[Operator]:
    """The operator against an API that signs people in with the tests' provider."""
    port = servers.free_port()
    settings = {
        **environment,
        "OCC_AUTH_SECRET": AUTH_SECRET,
        "OCC_AUTH_BASE_URL": f"http://127.0.0.1:{port}",
        "OCC_AUTH_OIDC_DISCOVERY_URL": provider.discovery_url,
        "OCC_AUTH_OIDC_CLIENT_ID": oidc_provider.CLIENT_ID,
        "OCC_AUTH_OIDC_CLIENT_SECRET": oidc_provider.CLIENT_SECRET,
    }
    with api(settings, tmp_path, port) as url:
        yield Operator(home=installed.home, api_url=url, key_file=installed.key_file)


def login_in_browser(operator: Operator, provider: oidc_provider.Provider, subject: str) -> Ran:
    """Run ``occ login --browser`` and be its browser: open the URL it prints, sign in on the
    provider's form, follow the redirects back to the client's loopback port."""
    args = ("login", "--browser", "--no-open", "--url", operator.api_url, "--timeout", "60")
    process = operator.start(*args)
    watchdog = threading.Timer(120, process.kill)  # a hung client fails the test, not the run
    watchdog.start()
    try:
        assert process.stderr is not None
        printed = process.stderr.readline()
        assert printed.startswith("sign in at: "), printed
        browser = requests.Session()
        started = browser.get(printed.removeprefix("sign in at: ").strip(), allow_redirects=False)
        assert started.status_code == 302, started.text
        callback = provider.authorize(started.headers["Location"], subject)
        back = browser.get(callback, allow_redirects=False, timeout=30)
        assert back.status_code == 303, back.text
        assert back.headers["Location"].startswith("http://127.0.0.1:")
        landed = browser.get(back.headers["Location"], timeout=30)
        assert landed.status_code == 200 and "Signed in" in landed.text
        stdout, stderr = process.communicate(timeout=60)
    finally:
        watchdog.cancel()
        process.kill()
    ran = Ran(args, process.returncode, stdout, printed + stderr)
    operator.runs.append(ran)
    return ran


def stored_key(operator: Operator) -> str | None:
    document = json.loads((operator.home / "config" / "occ" / "profile.json").read_text())
    key = document.get("key")
    return key if isinstance(key, str) else None


def test_a_person_logs_the_cli_in_through_the_browser_and_out_again(
    signing_in: Operator, provider: oidc_provider.Provider
) -> None:
    provider.set_user("maya-sub", name="Maya")

    logged_in = login_in_browser(signing_in, provider, "maya-sub")

    assert logged_in.exit_status == 0, logged_in
    assert logged_in.stdout.startswith(f"logged in to {signing_in.api_url} as prn_")
    token = stored_key(signing_in)
    assert token is not None and token.startswith("ses_")
    assert token not in signing_in.everything_printed()
    signing_in.ok("namespaces", "list")  # the person's own view: none yet
    mine = requests.get(
        f"{signing_in.api_url}/v1/sessions",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert mine.status_code == 200
    # the spent one-time code, then the token
    listed = [(s["issuer"], s["revokedAt"] is None) for s in mine.json()["data"]]
    assert listed == [("occ:cli-code", False), ("occ:cli", True)]

    logged_out = signing_in.ok("logout")

    assert "revoked" in logged_out.stdout
    assert stored_key(signing_in) is None
    again = requests.get(
        f"{signing_in.api_url}/v1/sessions",
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert again.status_code == 401
    refused = signing_in.run("namespaces", "list")
    assert refused.exit_status == 2 and "NOT_LOGGED_IN" in refused.stderr


def test_an_administrator_revokes_the_cli_token_and_the_cli_is_refused(
    signing_in: Operator, provider: oidc_provider.Provider
) -> None:
    assert login_in_browser(signing_in, provider, "noor-sub").exit_status == 0
    token = stored_key(signing_in)
    assert token is not None
    session_id = token.partition(".")[0]
    admin = {"Authorization": f"Bearer {signing_in.key_file.read_text().strip()}"}

    revoked = requests.delete(
        f"{signing_in.api_url}/v1/sessions/{session_id}", headers=admin, timeout=10
    )

    assert revoked.status_code == 200, revoked.text
    refused = signing_in.run("namespaces", "list")
    assert refused.exit_status == 2 and "UNAUTHENTICATED" in refused.stderr
    # logging out a token that no longer works still forgets it
    assert "revoked" in signing_in.ok("logout").stdout
    assert stored_key(signing_in) is None
