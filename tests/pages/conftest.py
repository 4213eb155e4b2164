"""Real Chromium (Debian's package) driven by Playwright against pytest-django's live server."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("MCPHUB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


@pytest.fixture
def browser(live_server, _orm_beside_playwright):
    """One Chromium per test: Playwright's loop lives only as long as the test that needs it."""
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        if os.environ.get("CI"):
            pytest.fail(
                f"Chromium is missing at {CHROMIUM}: `./hub test` installs it (apt-get install chromium)."
            )
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()


@pytest.fixture
def _orm_beside_playwright(monkeypatch):
    # Playwright's sync API keeps an event loop in this thread; the ORM calls made here are still sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def sign_in(browser, live_server):
    """A signed-in page for a persona, with clipboard access (for the copy buttons)."""
    contexts = []

    def open_as(username: str, password: str, *, width: int = 1280):
        context = browser.new_context(
            viewport={"width": width, "height": 900}, base_url=live_server.url
        )
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto("/login/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{live_server.url}/")
        return page

    yield open_as
    for context in contexts:
        context.close()


@pytest.fixture
def screenshot():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> None:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)

    return take
