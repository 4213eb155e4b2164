"""In real Chromium at 360 px: every page reachable from the nav fits the phone, as does an error page.

The pages are found, not listed: the nav's links, then every link on the pages found (one visit per
path), so a page added to the nav later is checked without touching this test.
"""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.accounts.models import User
from apps.accounts.services import add_member, create_access_token, create_team
from apps.catalog.models import McpServer
from apps.chat.services import create_conversation
from apps.llm.services import create_provider
from apps.toolsets.models import ToolCall
from apps.toolsets.services import create_endpoint, create_preset, enable_tools, update_preset

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = 360
SKIP = re.compile(r"^/(admin|api|logout|static|mcp)/|^/servers/export/")
MAX_PAGES = 40

# Elements reaching past the right edge, unless a scrolling box of their own holds them.
SPILLS = """() => {
  const limit = document.documentElement.clientWidth + 1, found = [];
  for (const el of document.querySelectorAll('main *, header *')) {
    const box = el.getBoundingClientRect();
    if (!box.width || box.right <= limit || el.closest('dialog:not([open])')) continue;
    let scroller = el.parentElement, held = false;
    for (; scroller && scroller !== document.body; scroller = scroller.parentElement) {
      const o = getComputedStyle(scroller).overflowX;
      // A scrolling box holds it on purpose; a 1 px box is visually-hidden text for screen readers.
      if (o === 'auto' || o === 'scroll' || scroller.getBoundingClientRect().width <= 1) { held = true; break; }
    }
    if (!held) found.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${el.className} right=${Math.round(box.right)}`);
  }
  // Text cut off by a box that hides its overflow (an ellipsis says so on purpose; form fields scroll their text).
  for (const el of document.querySelectorAll('main *:not(input):not(textarea):not(select)')) {
    const style = getComputedStyle(el);
    if ((style.overflowX === 'hidden' || style.overflowX === 'clip') && style.textOverflow !== 'ellipsis'
        && el.clientWidth > 1 && el.scrollWidth > el.clientWidth + 1) {
      found.push(`${el.tagName.toLowerCase()}.${el.className} cuts off ${el.scrollWidth - el.clientWidth} px`);
    }
  }
  // Tables in a sideways-scrolling box still scroll sideways: they must fit too (code blocks may scroll).
  for (const el of document.querySelectorAll('main .scroll-x')) {
    if (el.scrollWidth > el.clientWidth + 1) found.push(`.scroll-x#${el.firstElementChild.id} scrolls ${el.scrollWidth - el.clientWidth} px`);
  }
  return found.slice(0, 5);
}"""


@pytest.fixture
def a_busy_hub(admin_user, global_server, make_tool):
    """Long names, long errors, tokens, presets with versions and a day of calls: what makes pages wide."""
    github = McpServer.objects.create(
        name="github-enterprise-server",
        display_name="GitHub Enterprise (mirror)",
        transport="streamable_http",
        url="https://github-enterprise.internal.example.com/api/v3/mcp/streamable",
        status="healthy",
    )
    McpServer.objects.filter(pk=global_server.pk).update(
        status="down",
        last_error="spawn mcp-server-time ENOENT: no such file or directory, /usr/local/bin/x " * 3,
    )
    tools = [make_tool(github, f"search_issues_and_pull_requests_{n}", 250) for n in range(3)]
    tools.append(make_tool(global_server, "convert_time_between_timezones", 300))
    endpoint = admin_user.endpoints.get()
    create_endpoint(owner=admin_user, name="Research with a rather long endpoint name")
    enable_tools(endpoint=endpoint, tools=tools[:2])
    for name in ("Claude Desktop on the work laptop", "Cursor"):
        create_access_token(user=admin_user, name=name, endpoint=endpoint)
    provider = create_provider(
        actor=admin_user,
        name="LM Studio on the workstation in the lab",
        kind="openai",
        base_url="http://127.0.0.1:9/v1",
        default_model="qwen2.5-coder-32b-instruct-q4_k_m",
    )
    for title in (
        "Why is the time server down on the staging host?",
        "Summarise yesterday's failed deploys",
        "Compare the enterprise GitHub mirror's open issues with last week's",
        "Plan the migration",
    ):
        create_conversation(owner=admin_user, title=title, provider=provider, endpoint=endpoint)
    crew = create_team(
        name="Platform and infrastructure reliability engineering",
        slug="platform",
        owner=admin_user,
    )
    add_member(
        team=crew,
        user=User.objects.create_user(
            "a-rather-long-username", "someone.with.a.long.address@example.com"
        ),
    )
    preset = create_preset(
        owner=admin_user,
        name="Code review with the enterprise GitHub",
        tool_keys=[t.key for t in tools[:1]],
    )
    update_preset(preset=preset, user=admin_user, tool_keys=[t.key for t in tools])
    now = timezone.now()
    ToolCall.objects.bulk_create(
        ToolCall(
            user=admin_user,
            endpoint=endpoint,
            server_name=github.name,
            tool_name=tools[n % 3].name,
            exposed_name=tools[n % 3].name,
            started_at=now - timedelta(minutes=7 * n),
            duration_ms=120 + n,
            ok=n % 5 != 0,
            error="" if n % 5 else "upstream timeout",
        )
        for n in range(150)
    )
    return endpoint


def _links(page, selector: str) -> list[str]:
    hrefs = page.eval_on_selector_all(
        selector, "els => els.filter(a => !a.hasAttribute('download')).map(a => a.href)"
    )
    return [h for h in hrefs if urlsplit(h).netloc == urlsplit(page.url).netloc]


def _key(url: str) -> str:
    # Pages differing only in query string (filters, ?endpoint=) share a layout: one visit each.
    return urlsplit(url).path


def _check(page, screenshot, name: str, problems: list[str]) -> None:
    wide = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    spills = page.evaluate(SPILLS)
    if wide[0] > wide[1] or spills:
        problems.append(f"{name}: scrollWidth {wide[0]} > {wide[1]}; spilling: {spills}")
    # Stable names across runs: ids, uuids and endpoints' random suffixes become "n".
    stable = re.sub(
        r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|-[0-9a-f]{6}(?=/)|\d+", "n", name.lower()
    )
    screenshot(page, "phone-" + (re.sub(r"[^a-z0-9]+", "-", stable).strip("-") or "dashboard"))


def test_every_page_fits_a_phone(a_busy_hub, sign_in, screenshot, browser, live_server):
    page = sign_in("admin", "admin-password", width=PHONE)
    problems: list[str] = []
    header = page.locator("header.topbar").bounding_box()["height"]
    if header > 110:
        problems.append(f"the header takes {header:.0f} px of the phone's height")

    queue = [u for u in _links(page, "header nav a") if not SKIP.search(_key(u))]
    assert len(queue) >= 5, queue
    seen: set[str] = set()
    while queue and len(seen) < MAX_PAGES:
        url = queue.pop(0)
        if _key(url) in seen or SKIP.search(_key(url)):
            continue
        seen.add(_key(url))
        page.goto(url)
        _check(page, screenshot, _key(url), problems)
        queue += _links(page, "main a[href]")
    assert {"/", "/tools/", "/presets/", "/usage/", "/servers/", "/servers/import/"} <= seen, seen
    assert any(p.startswith("/chat/") and p != "/chat/" for p in seen), seen
    assert any(p.startswith("/endpoints/") and p.endswith("/delete/") for p in seen), seen
    assert any(p.startswith("/presets/") and p != "/presets/" for p in seen), seen
    assert {"/teams/", "/teams/platform/"} <= seen, seen

    page.goto("/servers/")
    current = page.locator('header nav [aria-current="page"]').bounding_box()
    assert current["x"] >= 0 and current["x"] + current["width"] <= PHONE, (
        "the current page's nav entry is off screen"
    )
    page.locator("#server-time").get_by_role("button", name="Stderr & counters").click()
    expect(page.locator("#server-time .server-panel")).to_be_visible()
    _check(page, screenshot, "servers-panel", problems)
    page.goto("/no/such/page/")
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    _check(page, screenshot, "not-found", problems)

    visitor = browser.new_context(
        viewport={"width": PHONE, "height": 800}, base_url=live_server.url
    ).new_page()
    visitor.goto("/login/")
    _check(visitor, screenshot, "login", problems)
    visitor.context.close()
    assert not problems, "\n".join(problems)
