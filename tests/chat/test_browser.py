"""In real Chromium: alice chats, approves a destructive call, stops a turn, and reloads her history."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from playwright.sync_api import expect

from apps.catalog.models import Tool
from tests.live_hub import free_port, hub_env, start_web, stop, wait_healthy
from tests.llm_server import Reply
from tests.pages.conftest import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@pytest.fixture
def web(hub, tmp_path, monkeypatch):
    """A web process of its own serving freshly collected static files (the session hub's may be stale);
    turns run in its loop (embedded) or in the session hub's worker (production shape)."""
    monkeypatch.setenv(
        "DJANGO_ALLOW_ASYNC_UNSAFE", "true"
    )  # Playwright's sync API keeps a loop here
    call_command("collectstatic", interactive=False, verbosity=0)
    port = free_port()
    process = start_web(port, hub_env(MCPHUB_DATA_DIR=str(tmp_path)), tmp_path, name="chat-web")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process])
        yield f"http://127.0.0.1:{port}"
    finally:
        stop([process])


@pytest.fixture
def page(web, alice):
    """Alice's signed-in page (her session made here: the hub's password hashers differ from the tests')."""
    from playwright.sync_api import sync_playwright

    client = Client()
    client.force_login(alice)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        context = browser.new_context(viewport={"width": 1100, "height": 900}, base_url=web)
        context.add_cookies(
            [
                {
                    "name": settings.SESSION_COOKIE_NAME,
                    "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                    "url": web,
                }
            ]
        )
        page = context.new_page()
        page.set_default_timeout(15_000)
        yield page
        browser.close()


def test_alice_chats_approves_stops_and_reloads(
    llm, alice_provider, alice_endpoint, echo_server, page
):
    Tool.objects.filter(server=echo_server, name="echo").update(
        annotations={"destructiveHint": True}
    )
    llm.script(
        [
            Reply(
                text=[
                    "Hello **alice**. ",
                    "<script>window.pwned = 1</script> [click](javascript:window.pwned=2)",
                ],
                tool_calls=[("c1", "echo", {"text": "hi"})],
                usage=(12, 5),
            ),
            Reply(text=["Echo said ", "`hi`"]),
            Reply(text=[f"tick{i} " for i in range(300)], chunk_delay=0.05),
        ]
    )
    page.goto("/")
    page.get_by_role("link", name="Chat").click()
    page.get_by_role("button", name="New conversation").click()
    expect(page.locator("#chat[data-connected=true]")).to_have_count(1)

    page.get_by_label("Message").fill("Please echo hi")
    page.get_by_label("Message").press("Enter")
    # The first turn in a fresh worker imports the LLM and MCP SDKs: allow more than the default 5 s.
    expect(page.locator(".msg-assistant strong").first).to_have_text("alice", timeout=30_000)
    expect(page.locator('.chat-list a[aria-current="page"]')).to_have_text("Please echo hi")
    expect(page.locator(".chat-settings summary strong")).to_have_text(
        "Please echo hi"
    )  # the heading too
    expect(page.locator("#id_title")).to_have_value(
        "Please echo hi"
    )  # saving settings keeps the title
    approval = page.locator(".approval")
    expect(approval).to_contain_text("Run echo? (marked destructive by its server)")
    page.get_by_role("button", name="Allow").click()
    # Embedded, the web process starts the echo server at this first call (the SDK's import): not 5 s.
    expect(page.locator(".toolcard summary").first).to_contain_text("echo · done", timeout=30_000)
    expect(page.locator(".msg-assistant code").last).to_have_text("hi")
    expect(page.locator(".usage").first).to_have_text(re.compile(r"^tokens in \d+ · out \d+$"))
    # The model's markup is shown as text; its javascript: link is not a link.
    expect(page.locator(".msg-assistant").first).to_contain_text(
        "<script>window.pwned = 1</script>"
    )
    assert page.locator(".msg-assistant a").count() == 0
    assert page.evaluate("window.pwned") is None

    page.get_by_label("Message").fill("Count for me")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg-assistant").last).to_contain_text("tick3")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".usage").last).to_contain_text("stopped")
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "chat.png"), full_page=True)

    page.reload()
    expect(page.locator("#chat[data-connected=true]")).to_have_count(1)
    expect(page.locator(".msg-user")).to_have_count(2)
    expect(page.locator(".toolcard summary")).to_contain_text("echo · done")
    expect(page.locator(".usage")).to_have_count(2)
    expect(page.locator(".msg-assistant").first).to_contain_text("Hello alice.")
    expect(page.locator(".msg-assistant code").first).to_have_text("hi")
    assert page.locator(".approval").count() == 0

    page.set_viewport_size({"width": 390, "height": 800})
    page.screenshot(path=str(SCREENSHOTS / "chat-phone.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    page.locator(
        ".chat-settings summary"
    ).click()  # the model picker lists what the provider serves
    expect(page.locator("#model-note")).to_have_text("2 models available")
    assert page.locator("#model-options option").count() == 2


def test_reasoning_shows_collapsed_and_a_cut_turn_continues(
    llm, alice_provider, alice_endpoint, echo_server, page
):
    llm.script(
        [
            Reply(
                reasoning=[f"step {i} of my thinking. " for i in range(40)],
                tool_calls=[("c1", "add", {"a": 2, "b": 3})],
                chunk_delay=0.05,
            ),
            Reply(text=["The sum is 5 and the story goes on and "], finish="length"),
            Reply(text=["on until it ends."]),
        ]
    )
    page.goto("/")
    page.get_by_role("link", name="Chat").click()
    page.get_by_role("button", name="New conversation").click()
    expect(page.locator("#chat[data-connected=true]")).to_have_count(1)
    page.get_by_label("Message").fill("Add 2 and 3, then tell a story")
    page.get_by_label("Message").press("Enter")

    # The thinking streams into a collapsed box while it goes on, never into the answer.
    thinking = page.locator("details.reasoning")
    expect(thinking.locator("summary")).to_have_text("Thinking…", timeout=30_000)
    expect(thinking.locator(".reasoning-text")).to_contain_text("step 3 of my thinking.")
    assert thinking.get_attribute("open") is None
    expect(thinking.locator(".reasoning-text")).to_be_hidden()
    expect(page.locator(".cut-notice")).to_contain_text(
        "Cut at the model's output limit.", timeout=30_000
    )
    expect(thinking.locator("summary")).to_have_text("Reasoning")
    assert "thinking" not in page.locator(".msg-assistant").last.inner_text()
    thinking.locator("summary").click()
    expect(thinking.locator(".reasoning-text")).to_contain_text("step 39 of my thinking.")

    page.reload()  # as it was, from the stored events
    expect(page.locator(".cut-notice")).to_have_count(1)
    expect(page.locator("details.reasoning summary")).to_have_text("Reasoning")
    assert page.locator("details.reasoning").get_attribute("open") is None
    page.get_by_role("button", name="Continue").click()
    expect(page.locator(".msg-assistant").last).to_have_text("on until it ends.")
    expect(page.locator(".usage").last).to_have_text(re.compile(r"^tokens in"))
    expect(page.locator(".cut-notice")).to_have_count(0)
    assert llm.requests[2]["messages"][-2]["content"] == "The sum is 5 and the story goes on and "
