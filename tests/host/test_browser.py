"""In real Chromium, on the chat page: Alice fills the form a backend asks for, allows then denies
a backend's request to use her model (sampling), and edits one before allowing it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from apps.toolsets.models import Endpoint
from tests.chat.test_browser import page, web  # noqa: F401 - the chat page's fixtures
from tests.llm_server import Reply
from tests.pages.conftest import SCREENSHOTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _open_chat(page) -> None:
    page.goto("/")
    page.get_by_role("link", name="Chat").click()
    page.get_by_role("button", name="New conversation").click()
    expect(page.locator("#chat[data-connected=true]")).to_have_count(1)


def test_alice_fills_a_backends_form_in_the_chat(llm, alice_provider, everything_endpoint, page):
    llm.script(
        [Reply(tool_calls=[("c1", "trigger-elicitation-request", {})]), Reply(text=["Thanks"])]
    )
    _open_chat(page)
    page.get_by_label("Message").fill("Ask me things")
    page.get_by_label("Message").press("Enter")

    form = page.locator(".elicitation")
    expect(form).to_contain_text("Please provide inputs for the following fields:", timeout=30_000)
    expect(form.get_by_label("Integer", exact=True)).to_have_value("42")  # the schema's defaults
    expect(form.get_by_label("Titled Single Select Enum", exact=True)).to_have_value("hero-1")
    form.get_by_label("String with email format").fill("alice@example.com")
    form.get_by_label("Integer", exact=True).fill("7")
    form.get_by_label("Boolean").check()
    form.get_by_label("Piano").check()
    # The browser itself asks for the required name first; the hub's check stands behind it.
    form.get_by_label("String *").fill("Alice Liddell")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "chat-elicitation.png"), full_page=True)
    form.get_by_role("button", name="Submit").click()

    expect(form).to_have_text("You answered: accept")
    card = page.locator(".toolcard", has_text="trigger-elicitation-request")
    expect(card.locator("summary")).to_contain_text("done", timeout=30_000)
    expect(card.locator(".tool-result")).to_contain_text("- Name: Alice Liddell")
    expect(card.locator(".tool-result")).to_contain_text("- Favorite Integer: 7")
    expect(card.locator(".tool-result")).to_contain_text("- Agreed to terms: true")

    page.reload()  # the answered request stays answered
    expect(page.locator(".elicitation")).to_have_text("You answered: accept")


def test_alice_allows_then_denies_a_backends_sampling(llm, alice_provider, asker_endpoint, page):
    Endpoint.objects.filter(pk=asker_endpoint.pk).update(sampling="ask")
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "a haiku about ponds"})]),
            Reply(text=["old pond, frog jumps"]),
            Reply(text=["Here it is."]),
            Reply(tool_calls=[("c2", "write", {"question": "another"})]),
            Reply(text=["No haiku then."]),
        ]
    )
    _open_chat(page)
    page.get_by_label("Message").fill("Write me a haiku")
    page.get_by_label("Message").press("Enter")
    cards = page.locator(".toolcard").filter(
        has=page.locator("summary", has_text=re.compile(r"^sampling"))
    )
    sampling = cards.first
    expect(sampling.locator(".approval")).to_contain_text("Run sampling?", timeout=30_000)
    expect(sampling.locator(".tool-args")).to_contain_text("user: a haiku about ponds")
    sampling.get_by_role("button", name="Allow").click()
    expect(sampling.locator(".tool-result")).to_have_text("old pond, frog jumps")
    expect(page.locator(".msg-assistant").last).to_have_text("Here it is.")

    page.get_by_label("Message").fill("Another one")
    page.get_by_label("Message").press("Enter")
    denied = cards.nth(1)
    denied.get_by_role("button", name="Deny").click()
    expect(denied.locator("summary")).to_contain_text("sampling · error")
    expect(denied.locator(".tool-result")).to_have_text("The user declined the sampling request.")
    expect(page.locator(".msg-assistant").last).to_have_text("No haiku then.")
    assert len(llm.requests) == 5


def test_alice_opens_a_backends_link_and_the_chat_hears_she_is_done(
    llm, alice_provider, asker_endpoint, page
):
    llm.script([Reply(tool_calls=[("c1", "connect_account", {})]), Reply(text=["Connected."])])
    _open_chat(page)
    page.get_by_label("Message").fill("Connect my account")
    page.get_by_label("Message").press("Enter")

    box = page.locator(".elicitation")
    expect(box).to_contain_text("Connect your account to go on.", timeout=30_000)
    with page.context.expect_page() as opened:
        box.get_by_role("button", name="Open").click()
    tab = opened.value  # the backend's own page, in a tab of its own
    expect(tab.locator("body")).to_contain_text("Your account is connected")
    expect(box).to_have_text("Done at the link: the server heard you finished.")
    card = page.locator(".toolcard", has_text="connect_account")
    expect(card.locator(".tool-result")).to_contain_text("connected (", timeout=30_000)
    expect(page.locator(".msg-assistant").last).to_have_text("Connected.")

    page.reload()  # told again from the conversation's stored events
    expect(page.locator(".elicitation")).to_have_text(
        "Done at the link: the server heard you finished."
    )


def test_alice_edits_a_backends_sampling_request_then_allows_it(
    llm, alice_provider, asker_endpoint, page
):
    Endpoint.objects.filter(pk=asker_endpoint.pk).update(sampling="ask")
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "a haiku about ponds"})]),
            Reply(text=["frogs leap"]),
            Reply(text=["Here it is."]),
        ]
    )
    _open_chat(page)
    page.get_by_label("Message").fill("Write me a haiku")
    page.get_by_label("Message").press("Enter")
    sampling = page.locator(".toolcard").filter(
        has=page.locator("summary", has_text=re.compile(r"^sampling"))
    )
    expect(sampling.locator(".approval")).to_contain_text("Run sampling?", timeout=30_000)
    sampling.get_by_role("button", name="Edit").click()
    edit = sampling.locator(".sampling-edit")
    expect(edit.get_by_label("Message 1 (user)")).to_have_value("a haiku about ponds")
    expect(edit.get_by_label("Max tokens (at most 300)")).to_have_value("300")
    # Over the cap: the browser's bound is bypassed, the hub's check refuses it and shows why.
    edit.get_by_label("Max tokens (at most 300)").fill("500")
    edit.evaluate("f => f.noValidate = true")
    edit.get_by_role("button", name="Allow edited").click()
    expect(sampling.locator(".sampling-edit-error")).to_contain_text("from 1 to 300")
    edit = sampling.locator(".sampling-edit")
    edit.get_by_label("Message 1 (user)").fill("a haiku about frogs")
    edit.get_by_label("System prompt").fill("You write short haiku.")
    edit.get_by_label("Max tokens (at most 300)").fill("40")
    edit.get_by_role("button", name="Allow edited").click()

    expect(sampling.locator(".tool-result")).to_have_text("frogs leap", timeout=30_000)
    expect(page.locator(".msg-assistant").last).to_have_text("Here it is.")
    # The card shows the request as sent (edited), on reload too.
    for _ in range(2):
        card = page.locator(".toolcard").filter(
            has=page.locator("summary", has_text=re.compile(r"^sampling"))
        )
        expect(card.locator(".tool-args")).to_contain_text("user: a haiku about frogs")
        expect(card.locator(".tool-args")).to_contain_text('"maxTokens": 40')
        expect(card.locator(".tool-args")).not_to_contain_text("ponds")
        expect(card).to_contain_text("Arguments (as you edited them)")
        page.reload()
    sampled = llm.requests[1]
    assert sampled["messages"] == [
        {"role": "system", "content": "You write short haiku."},
        {"role": "user", "content": "a haiku about frogs"},
    ]
    assert sampled["max_tokens"] == 40 and len(llm.requests) == 3
    # The backend got the answer to the edited request (its tool returned it to the model).
    told = [m for m in llm.requests[2]["messages"] if m["role"] == "tool"]
    assert '"text": "frogs leap"' in told[0]["content"]
