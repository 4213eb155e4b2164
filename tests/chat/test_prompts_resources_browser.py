"""In real Chromium, at a desktop and a phone width: alice picks a prompt with `/` (its arguments
completed by server-everything), attaches a resource with `@`, and watches a tool's progress bar move."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.chat.test_browser import page, web  # noqa: F401 - the chat page fixtures
from tests.llm_server import Reply
from tests.pages.conftest import SCREENSHOTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(150)]


@pytest.mark.parametrize("width", [1280, 390])
def test_alice_uses_a_prompt_a_resource_and_sees_progress(
    llm, alice_provider, everything_endpoint, page, width
):
    page.set_viewport_size({"width": width, "height": 900})
    llm.script(
        [
            Reply(text=["Eve is promoted."]),
            Reply(
                text=["Reading it. "],
                tool_calls=[("p1", "trigger-long-running-operation", {"duration": 4, "steps": 8})],
            ),
            Reply(text=["Done."]),
        ]
    )
    page.goto("/chat/")
    page.get_by_role("button", name="New conversation").click()
    expect(page.locator("#chat[data-connected=true]")).to_have_count(1)
    message = page.get_by_label("Message")

    # `/` lists the endpoint's prompts with their descriptions; typing narrows them.
    message.press_sequentially("/compl")
    menu = page.locator("#chat-menu")
    expect(menu).to_be_visible()
    expect(menu.locator(".chat-menu-item")).to_have_count(1)
    expect(menu).to_contain_text("First argument choice narrows values")
    message.press("Enter")
    # Its arguments' form suggests what the backend completes, the second knowing the first.
    department = page.locator("#chat-arg-department")
    department.press_sequentially("S")
    expect(page.locator("#chat-arg-department-options option")).to_have_count(2)
    department.fill("Sales")
    page.locator("#chat-arg-name").focus()
    options = page.locator("#chat-arg-name-options option")
    expect(options).to_have_count(3)
    assert [o.get_attribute("value") for o in options.all()] == ["David", "Eve", "Frank"]
    page.locator("#chat-arg-name").fill("Eve")
    page.get_by_role("button", name="Use prompt").click()
    expect(page.locator(".chat-context .chip")).to_have_text("/completable-prompt×")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".msg-prompt")).to_contain_text(
        "Please promote Eve to the head of the Sales team."
    )
    expect(page.locator(".msg-assistant").last).to_have_text("Eve is promoted.", timeout=30_000)

    # `@` lists resources and templates; a template's variable is filled, then attached.
    message.press_sequentially("Look at @dynamic/text")
    expect(menu.locator(".chat-menu-item").first).to_contain_text("demo://resource/dynamic/text/")
    message.press("Enter")
    page.locator("#chat-arg-resourceId").fill("5")
    page.get_by_role("button", name="Attach").click()
    expect(page.locator(".chat-context .chip")).to_contain_text("@")
    message.press("Enter")
    attachment = page.locator(".mcp-attachment").last
    expect(attachment).to_contain_text("@ demo://resource/dynamic/text/5")
    assert llm.requests and "Look at" in page.locator(".msg-user").last.inner_text()

    # The tool's progress bar moves while it runs, then gives way to the result.
    bar = page.locator(".toolcard .mcp-progress progress")
    expect(bar).to_have_attribute("max", "8", timeout=30_000)
    first = float(bar.get_attribute("value"))
    page.wait_for_function(
        f"() => Number(document.querySelector('.toolcard .mcp-progress progress')?.value) > {first}"
        " || !document.querySelector('.toolcard .mcp-progress')"
    )
    page.screenshot(path=str(SCREENSHOTS / f"chat-prompts-progress-{width}.png"), full_page=True)
    expect(page.locator(".toolcard summary")).to_contain_text("done", timeout=30_000)
    expect(page.locator(".toolcard .mcp-progress")).to_have_count(0)
    told = llm.requests[1]["messages"][-1]["content"]
    assert "Resource 5: This is a plaintext resource" in told
    # Nothing overflows the phone's width.
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_finished_runs_page_shows_structured_content_images_and_reads_links_in_place(
    llm, alice, alice_provider, everything_endpoint, page, web
):
    import httpx2

    from apps.accounts.services import create_access_token
    from tests.waiting import eventually

    llm.script(
        [
            Reply(
                tool_calls=[
                    ("s1", "get-structured-content", {"location": "Chicago"}),
                    ("i1", "get-tiny-image", {}),
                    ("l1", "get-resource-links", {"count": 2}),
                ]
            ),
            Reply(text=["Here they are."]),
        ]
    )
    token = create_access_token(user=alice, name="runs page")[1]
    api = httpx2.Client(base_url=web + "/api", headers={"Authorization": f"Bearer {token}"})
    run = api.post("/runs/", json={"task": "Show me things"}).json()["id"]
    eventually(
        lambda: api.get(f"/runs/{run}/").json()["status"] == "succeeded",
        timeout=60,
        what="the run to succeed",
    )
    page.goto(f"/runs/{run}/")
    card = page.locator(".toolcard").nth(0)
    card.locator("summary").click()
    expect(card.locator(".mcp-table")).to_contain_text("temperature")
    image = page.locator(".toolcard").nth(1).locator("img.mcp-image")
    expect(image).to_have_count(1)
    assert page.evaluate("document.querySelector('img.mcp-image').naturalWidth") > 0
    links = page.locator(".toolcard").nth(2)
    links.locator("summary").click()
    links.get_by_role("button", name="Text Resource 2").click()
    expect(links.locator(".mcp-link-body")).to_contain_text(
        "Resource 2: This is a plaintext resource"
    )
