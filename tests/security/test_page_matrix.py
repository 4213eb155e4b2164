"""Every page of the site (GET and POST) for those who must not reach alice's things: anonymous is
sent to sign in, charlie and dave (staff without model permissions) are refused or see only their
own, and no answer holds anything of alice's. dave sees no model page of the admin either."""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, get_resolver, reverse

from apps.accounts.models import User
from tests.security.conftest import PRIVATE, TEAM, World

REFUSED = {403, 404, 405}


def page_urls(world: World) -> list[str]:
    """Every named page of the web app, its arguments pointing at alice's things."""
    values = {
        "slug": world.endpoint,
        "name": world.server,
        "server": world.server,
        "tool_id": world.tool_id,
        "token_id": world.token,
        "preset_id": world.preset,
        "conversation_id": world.conversation,
        "provider_id": world.provider,
        "pattern_id": world.pattern,
        "run_id": world.run,
        "connection_id": world.connection,
        "team": world.team,
        "user_id": User.objects.get(username="alice").pk,
    }
    urls = []
    for pattern in get_resolver("apps.web.urls").url_patterns:
        assert isinstance(pattern, URLPattern)
        names = list(pattern.pattern.converters)
        urls.append(reverse(f"web:{pattern.name}", kwargs={name: values[name] for name in names}))
    return urls


def test_nobody_else_reaches_alices_pages(world, client, charlie, dave):
    signed_in = {"charlie": Client(), "dave": Client()}
    signed_in["charlie"].force_login(charlie)
    signed_in["dave"].force_login(dave)
    wrong = []
    for url in page_urls(world):
        for method in ("get", "post"):
            with transaction.atomic():
                anonymous = getattr(Client(), method)(url)
                transaction.set_rollback(True)
            if url not in ("/login/", "/logout/") and not (
                anonymous.status_code == 302 and "/login/" in anonymous["Location"]
            ):
                wrong.append(f"anonymous {method} {url}: {anonymous.status_code}")
            for persona, browser in signed_in.items():
                if url == "/logout/":
                    continue  # signing out would end the persona's session for the rest of the matrix
                with transaction.atomic():
                    response = getattr(browser, method)(url)
                    transaction.set_rollback(True)
                # The error page names the path asked for: that echo is the asker's own words, not a leak.
                text = response.content.decode(errors="replace").replace(url, "")
                if PRIVATE in text or TEAM in text:
                    wrong.append(f"{persona} {method} {url}: leaks alice's things")
                if (
                    f"/{world.endpoint}/" in url
                    or f"/{world.preset}/" in url
                    or world.conversation in url
                    or f"/{world.provider}/" in url
                    or f"/{world.server}/" in url
                    or f"/{world.tool_id}/" in url
                    or world.run in url
                    or f"/{world.team}/" in url
                ):
                    if response.status_code not in REFUSED:
                        wrong.append(
                            f"{persona} {method} {url}: {response.status_code}, expected refusal"
                        )
    assert wrong == [], "\n".join(wrong)


def test_dave_is_refused_every_model_page_of_the_admin(world, client, dave):
    client.force_login(dave)

    index = client.get("/admin/")
    statuses = {
        model._meta.label: client.get(
            reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        ).status_code
        for model in admin.site._registry
    }

    assert index.status_code == 200 and PRIVATE not in index.content.decode()
    assert set(statuses.values()) == {403}, statuses
