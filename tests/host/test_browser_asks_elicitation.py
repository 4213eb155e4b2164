"""In real Chromium: Alice has her dashboard open while an MCP client that declares no elicitation
(the `mcp` SDK client) calls a server-everything tool that asks for a form. The form shows in the
page's "The hub needs your answer" panel; her answer lets the client's call go on. In production
shape the client calls the session hub's web process and the page is held by another one."""

from __future__ import annotations

import threading

import anyio
import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.chat.test_browser import page, web  # noqa: F401 - the chat page's fixtures
from tests.live_hub import mcp_client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _call_in_thread(url: str, token: str, outcome: dict) -> threading.Thread:
    async def call() -> None:
        async with mcp_client(url, token) as client:
            tools = (await client.list_tools()).tools
            tool = next(t.name for t in tools if t.name.endswith("trigger-elicitation-request"))
            outcome["result"] = await client.call_tool(tool, {})

    def run() -> None:
        try:
            anyio.run(call)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_alice_answers_a_gateway_clients_form_on_her_dashboard(
    hub, web, everything_endpoint, alice_hub_token, page
):
    page.goto("/")
    panel = page.locator("#asks")
    expect(panel).to_have_attribute("data-connected", "true")
    expect(panel).to_be_hidden()
    # Embedded, each process has its own channel layer: the client calls the page's process.
    base = hub.base_url if settings.REDIS_URL else web
    outcome: dict = {}
    thread = _call_in_thread(base + everything_endpoint.path, alice_hub_token, outcome)

    expect(panel).to_be_visible(timeout=30_000)
    expect(panel).to_contain_text("The hub needs your answer")
    form = panel.locator(".elicitation")
    expect(form).to_contain_text("Please provide inputs for the following fields:")
    form.get_by_label("String *").fill("Alice Liddell")
    form.get_by_label("Integer", exact=True).fill("500")
    form.evaluate("f => f.querySelector('form').noValidate = true")  # the hub's check stands
    form.get_by_role("button", name="Submit").click()
    expect(panel.locator(".elicit-error")).to_have_text("Integer must be at most 100.")
    panel.locator(".elicitation").get_by_label("Integer", exact=True).fill("7")
    panel.locator(".elicitation").get_by_role("button", name="Submit").click()

    expect(panel).to_be_hidden(timeout=30_000)
    thread.join(30)
    assert "error" not in outcome, outcome.get("error")
    text = "\n".join(c.text for c in outcome["result"].content)
    assert "- Name: Alice Liddell" in text and "- Favorite Integer: 7" in text
