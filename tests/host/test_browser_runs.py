"""In real Chromium, on a run's page: the run waits for Alice's answer to a backend's form; the
page shows the form (also after a reload), a wrong value is refused, her answer lets the run go on.
And she edits a backend's sampling request before allowing it (a wrong edit refused)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from apps.toolsets.models import Endpoint
from tests.chat.test_browser import page, web  # noqa: F401 - the chat page's fixtures
from tests.llm_server import Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def test_alice_answers_a_runs_question_on_its_page(llm, alice_provider, everything_endpoint, page):
    llm.script(
        [
            Reply(tool_calls=[("c1", "trigger-elicitation-request", {})]),
            Reply(text=["Thanks, Alice."]),
        ]
    )
    page.goto("/")
    page.get_by_role("link", name="Runs").click()
    page.get_by_label("Task").fill("Collect my details")
    page.get_by_role("button", name="Start run").click()

    form = page.locator(".elicitation")
    expect(form).to_contain_text("Please provide inputs for the following fields:", timeout=30_000)
    expect(page.locator("#run-status")).to_have_text("Waiting for input")
    page.reload()  # kept with the run: a reload (or another device) shows the same question
    # A page loaded while the run waits for input follows the run live (it once did not: a page
    # reloaded after the answer, before the worker took it, then never heard the run go on).
    expect(page.locator("#run")).to_have_attribute("data-connected", "true")
    form = page.locator(".elicitation")
    form.get_by_label("String *").fill("Alice Liddell")
    form.get_by_label("Integer", exact=True).fill("500")  # the browser's own bound check...
    form.evaluate(
        "f => f.querySelector('form').noValidate = true"
    )  # ...is bypassed: the hub's stands
    form.get_by_role("button", name="Submit").click()
    expect(page.locator(".elicit-error")).to_have_text("Integer must be at most 100.")
    page.locator(".elicitation").get_by_label("Integer", exact=True).fill("7")
    page.locator(".elicitation").get_by_role("button", name="Submit").click()

    expect(page.locator("#run-status")).to_have_text("Succeeded", timeout=30_000)
    expect(page.locator("#run-answer")).to_contain_text("Thanks, Alice.")
    expect(page.locator(".elicitation")).to_have_count(0)


def test_alice_edits_a_runs_sampling_request_on_its_page(llm, alice_provider, asker_endpoint, page):
    Endpoint.objects.filter(pk=asker_endpoint.pk).update(sampling="ask")
    llm.script(
        [
            Reply(tool_calls=[("c1", "write", {"question": "a haiku about ponds"})]),
            Reply(text=["snow on the pond"]),
            Reply(text=["Done: snow on the pond"]),
        ]
    )
    page.goto("/")
    page.get_by_role("link", name="Runs").click()
    page.get_by_label("Task").fill("Get a haiku written")
    page.get_by_role("button", name="Start run").click()

    approval = page.locator(".approval[data-editable]")
    expect(approval).to_contain_text("Run sampling?", timeout=30_000)
    approval.get_by_role("button", name="Edit").click()
    edit = approval.locator(".sampling-edit")
    expect(edit.get_by_label("Message 1 (user)")).to_have_value("a haiku about ponds")
    edit.get_by_label("Max tokens (at most 300)").fill("0")  # refused by the hub: nothing changes
    edit.evaluate("f => f.noValidate = true")
    edit.get_by_role("button", name="Allow edited").click()
    expect(page.locator(".flash-error")).to_contain_text("from 1 to 300")
    approval = page.locator(".approval[data-editable]")
    approval.get_by_role("button", name="Edit").click()
    edit = approval.locator(".sampling-edit")
    edit.get_by_label("Message 1 (user)").fill("a haiku about snow")
    edit.get_by_label("Max tokens (at most 300)").fill("60")
    edit.get_by_role("button", name="Allow edited").click()

    expect(page.locator("#run-status")).to_have_text("Succeeded", timeout=30_000)
    expect(page.locator("#run-answer")).to_contain_text("Done: snow on the pond")
    sampled = llm.requests[1]
    assert sampled["messages"][-1] == {"role": "user", "content": "a haiku about snow"}
    assert sampled["max_tokens"] == 60
