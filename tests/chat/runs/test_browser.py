"""In real Chromium: alice starts a run on the Runs page, watches its steps arrive, cancels it,
and resumes an interrupted one to its answer."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from apps.chat.runs.models import Run, RunStep
from tests.chat.test_browser import page, web  # noqa: F401 - the chat page's browser fixtures
from tests.llm_server import Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _slow_adds(llm, delay: float) -> None:
    def respond(body: dict) -> Reply:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return Reply(tool_calls=[(f"c{done + 1}", "add", {"a": done, "b": 1})], delay=delay)

    llm.responder = respond


def test_alice_starts_watches_and_cancels_a_run(llm, alice_provider, alice_endpoint, page):
    _slow_adds(llm, delay=0.4)
    page.goto("/")
    page.get_by_role("link", name="Runs").click()
    page.get_by_label("Task").fill("Count <b>slowly</b>")
    page.get_by_label("Servers (comma-separated; empty: every tool of the endpoint)").fill("echo")
    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#run[data-connected=true]")).to_have_count(1, timeout=30_000)
    expect(page.locator(".step[data-round='3']")).to_have_count(1, timeout=30_000)
    card = page.locator(".step[data-round='3'] .toolcard")  # arrived live: built by runs.js
    expect(card.locator("summary")).to_have_text(re.compile(r"^add · done · \d+ ms$"))
    expect(card.locator(".tool-args")).to_have_text('{\n  "a": 2,\n  "b": 1\n}')
    expect(card.locator(".tool-result")).to_have_text("3")
    expect(page.locator(".run-task")).to_have_text("Count <b>slowly</b>")
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#run-status")).to_have_text("Cancelled", timeout=15_000)
    assert Run.objects.get().status == "cancelled"

    page.get_by_role("link", name="← Runs").click()
    expect(page.locator("table.runs tbody tr")).to_have_count(1)
    expect(page.locator("table.runs .status")).to_have_text("Cancelled")


def test_alice_resumes_an_interrupted_run(llm, alice, alice_provider, alice_endpoint, page):
    run = Run.objects.create(
        owner=alice,
        task="Add one more",
        provider=alice_provider,
        endpoint=alice_endpoint,
        servers=["echo"],
        status=Run.Status.INTERRUPTED,
        rounds=1,
        error="The worker running this run was lost: resume it to continue.",
    )
    RunStep.objects.create(
        run=run,
        round=1,
        tool_calls=[
            {
                "id": "c1",
                "name": "add",
                "arguments": {"a": 1, "b": 1},
                "isError": False,
                "result": {"content": [{"type": "text", "text": "2"}]},
            }
        ],
    )
    llm.script(
        [Reply(text=["It was **2** <script>window.pwned = 1</script> [x](javascript:alert(1))"])]
    )
    page.goto(f"/runs/{run.pk}/")
    expect(page.locator("#run-status")).to_have_text("Interrupted")
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#run-status")).to_have_text("Succeeded", timeout=30_000)
    expect(page.locator("#run-answer")).to_contain_text("It was 2")
    expect(page.locator("#run-answer strong")).to_have_text(
        "2"
    )  # the answer's markdown, rendered safely
    expect(page.locator("#run-answer")).to_contain_text("<script>window.pwned = 1</script>")
    assert page.locator("#run-answer a").count() == 0 and page.evaluate("window.pwned") is None
    expect(page.locator(".step")).to_have_count(2)
    stored = page.locator(
        ".step[data-round='1'] .toolcard"
    )  # stored before: rendered by the server
    expect(stored.locator("summary")).to_have_text("add · done")
    expect(stored.locator(".tool-args")).to_have_text('{\n  "a": 1,\n  "b": 1\n}')
    expect(stored.locator(".tool-result")).to_have_text("2")
    assert [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "tool"] == ["2"]
