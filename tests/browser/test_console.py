"""The console as a person uses it, in Chromium: sign in with the OpenID Connect provider,
create a Namespace and an Agent, deploy it on the local driver and watch it become active,
stop it, delete it; a second person without permissions cannot see the first one's
Namespace; a change without the CSRF token is refused; a revoked session goes back to
sign-in."""

from __future__ import annotations

import os
import re
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from occ import iam
from tests.browser.conftest import Console
from tests.support import grants

ACTIVE_WITHIN_MS = 90_000


def sign_in(page: Page, console: Console, subject: str) -> None:
    page.goto(f"{console.base_url}/console")
    expect(page).to_have_url(re.compile(r"/console/sign-in\?next="))
    shot(page, "sign-in")
    page.get_by_role("link", name="Sign in with Single sign-on").click()
    page.get_by_placeholder("sub").fill(subject)
    page.get_by_role("button", name="Authorize").click()
    expect(page).to_have_url(f"{console.base_url}/console/namespaces")


def shot(page: Page, name: str) -> None:
    """Check the page with axe-core (no serious or critical violation), and save a screenshot
    of it for docs/console.md when ``CONSOLE_SCREENSHOTS`` names a directory
    (``docs/images``)."""
    results = Axe().run(page)
    assert results.response["testEngine"]["name"] == "axe-core"
    serious = [
        (violation["id"], [node["target"] for node in violation["nodes"]])
        for violation in results.response["violations"]
        if violation["impact"] in ("serious", "critical")
    ]
    assert serious == [], (name, serious)
    directory = os.environ.get("CONSOLE_SCREENSHOTS")
    if directory:
        page.screenshot(path=str(Path(directory) / f"console-{name}.png"), full_page=True)


def principal_id(page: Page) -> str:
    text = page.locator(".who code").inner_text()
    assert text.startswith("prn_"), text
    return text


def test_a_person_runs_an_agent_from_the_console(
    page: Page, browser: Browser, console: Console
) -> None:
    sign_in(page, console, "ada@example.com")
    expect(page.get_by_text("You can see no Namespace")).to_be_visible()
    grants.give(console.db, principal_id(page), list(iam.ADMINISTRATOR_PERMISSIONS))
    page.reload()
    shot(page, "namespaces-empty")

    page.get_by_label("Name", exact=True).fill("team-web")
    page.get_by_role("button", name="Create Namespace").click()
    expect(page).to_have_url(re.compile(r"/console/namespaces/ns_"))
    namespace_url = page.url
    expect(page.locator("[data-field=status]").first).to_have_text("ready", timeout=60_000)

    page.locator("#configuration-name").fill("base")
    page.get_by_role("button", name="Create Configuration").click()
    expect(page.get_by_text("base", exact=False).first).to_be_visible()
    # a refused change shows the problem's detail where the form says, and nothing reloads
    page.locator("#configuration-name").fill("base")
    page.get_by_role("button", name="Create Configuration").click()
    expect(page.get_by_text("with this name already exists in the Namespace")).to_be_visible()
    page.locator("#secret-name").fill("model-token")
    page.locator("#secret-value").fill("s3cret-value-never-shown")
    page.get_by_role("button", name="Create Secret").click()
    expect(page.locator("#agent-name")).to_be_visible()
    assert "s3cret-value-never-shown" not in page.content()

    page.locator("#agent-name").fill("helper")
    page.get_by_role("button", name="Create Agent").click()
    expect(page).to_have_url(re.compile(r"/agents/agt_"))

    page.get_by_role("button", name="Deploy").click()
    expect(page).to_have_url(re.compile(r"\?deployment="))
    expect(page.locator("#deployment-state")).to_have_text("active", timeout=ACTIVE_WITHIN_MS)
    expect(page.locator("#agent-endpoint")).not_to_have_text("—")
    expect(page.locator("#revisions tbody tr")).to_have_count(1)
    page.get_by_role("button", name="Show the last 200 lines").click()
    expect(page.locator("#runtime-logs")).to_contain_text("gateway.started", timeout=30_000)
    shot(page, "agent")
    page.goto(namespace_url)
    expect(page.locator("[data-field=status]").nth(1)).to_have_text("active")
    shot(page, "namespace")
    page.go_back()

    page.get_by_role("button", name="Stop").click()
    expect(page.locator("#agent-desired")).to_have_text("stopped", timeout=30_000)

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete Agent").click()
    expect(page).to_have_url(namespace_url)

    # the operator views: what was done, and the work that did it
    page.goto(f"{console.base_url}/console/audit")
    expect(page.locator("tbody tr").first).to_contain_text("agents.")
    shot(page, "audit")
    page.goto(f"{console.base_url}/console/work")
    expect(page.locator("tbody tr").first).not_to_contain_text("No work")
    shot(page, "work")

    # a second person, without permissions, sees nothing of it
    other = browser.new_context()
    try:
        stranger = other.new_page()
        sign_in(stranger, console, "bo@example.com")
        expect(stranger.get_by_text("You can see no Namespace")).to_be_visible()
        assert "team-web" not in stranger.content()
        answer = stranger.goto(namespace_url)
        assert answer is not None and answer.status == 404
    finally:
        other.close()

    # a change made with the cookie but without the CSRF token is refused
    refused = page.request.post(
        f"{console.base_url}/v1/namespaces", data={"name": "forged"}, fail_on_status_code=False
    )
    assert refused.status == 403 and refused.json()["code"] == "CSRF_TOKEN_INVALID"

    # revoking the session sends the next page back to sign-in
    current = page.request.get(f"{console.base_url}/v1/sessions/current").json()["data"]
    revoked = page.request.delete(
        f"{console.base_url}/v1/sessions/{current['id']}",
        headers={"X-CSRF-Token": current["csrfToken"]},
    )
    assert revoked.ok
    page.goto(f"{console.base_url}/console/namespaces")
    expect(page).to_have_url(re.compile(r"/console/sign-in"))


def test_an_administrator_mints_and_revokes_a_key_and_binds_a_role_in_a_namespace(
    page: Page, console: Console
) -> None:
    sign_in(page, console, "cy@example.com")
    me = principal_id(page)
    grants.give(console.db, me, list(iam.ADMINISTRATOR_PERMISSIONS))
    page.reload()
    page.get_by_label("Name", exact=True).fill("team-keys")
    page.get_by_role("button", name="Create Namespace").click()
    expect(page).to_have_url(re.compile(r"/console/namespaces/ns_"))
    namespace_id = page.url.rsplit("/", 1)[1]

    page.goto(f"{console.base_url}/console/people")
    mine = page.locator("#principals tr", has_text=me)
    page.once("dialog", lambda dialog: dialog.accept())
    mine.get_by_role("button", name=re.compile("Mint an API key")).click()
    shown = mine.locator("output")
    expect(shown).to_have_text(re.compile(r"^occ_"))
    key = shown.inner_text()
    listed = page.request.get(
        f"{console.base_url}/v1/namespaces",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert listed.ok and [n["id"] for n in listed.json()["data"]] == [namespace_id]
    page.reload()
    assert key not in page.content()  # shown that once

    page.locator("#binding-principal").select_option(me)
    page.locator("#binding-namespace").select_option(namespace_id)
    page.get_by_role("button", name="Bind the Role").click()
    expect(page.locator("#bindings tr", has_text="Namespace team-keys")).to_have_count(1)
    live_keys = page.locator("#keys tr[data-key]")
    expect(live_keys).to_have_count(1)  # the one minted above, never its value
    shot(page, "people")

    page.once("dialog", lambda dialog: dialog.accept())
    live_keys.get_by_role("button", name=re.compile("Revoke key")).click()
    expect(live_keys).to_have_count(0)
    refused = page.request.get(
        f"{console.base_url}/v1/namespaces",
        headers={"Authorization": f"Bearer {key}"},
        fail_on_status_code=False,
    )
    assert refused.status == 401
