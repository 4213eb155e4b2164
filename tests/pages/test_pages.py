"""Pages, server side: who may see what, toggles over htmx, tokens shown once, presets shared."""

from __future__ import annotations

import pytest

from apps.accounts.models import AccessToken
from apps.toolsets.models import Preset
from apps.toolsets.services import create_preset, enable_tools

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def tools(global_server, make_tool):
    return {
        name: make_tool(global_server, name, tokens)
        for name, tokens in [("now", 100), ("convert", 300), ("zones", 600)]
    }


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


@pytest.mark.parametrize("path", ["/", "/tools/", "/presets/", "/endpoint/"])
def test_anonymous_visitors_are_sent_to_sign_in(client, db, path):
    response = client.get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_signing_in_and_out(client, alice):
    response = client.post("/login/", {"username": "alice", "password": "alice-password"})
    assert response.status_code == 302 and response["Location"] == "/"

    assert client.get("/").status_code == 200
    client.post("/logout/")
    assert client.get("/").status_code == 302


def test_a_wrong_password_says_so(client, alice):
    response = client.post("/login/", {"username": "alice", "password": "nope"})

    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


@pytest.mark.parametrize("path", ["/", "/tools/", "/presets/", "/endpoint/"])
def test_every_main_page_renders_for_alice(as_alice, tools, path):
    response = as_alice.get(path, follow=True)

    assert response.status_code == 200


def test_the_dashboard_shows_endpoint_url_count_and_budget(as_alice, alice, tools):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[tools["now"]])

    page = as_alice.get("/", HTTP_HOST="127.0.0.1:18431").content.decode()

    assert f"http://127.0.0.1:18431/mcp/{endpoint.slug}/" in page
    assert "1</strong> tool enabled" in page
    assert "100 / 20000 tokens" in page


def test_charlie_cannot_open_alices_endpoint_or_toggle_its_tools(client, charlie, alice, tools):
    client.force_login(charlie)
    slug = alice.endpoints.get().slug

    assert client.get(f"/endpoints/{slug}/").status_code == 404
    assert (
        client.post(
            f"/endpoints/{slug}/tools/{tools['now'].pk}/toggle/", {"enabled": "on"}, **HTMX
        ).status_code
        == 404
    )
    assert alice.endpoints.get().tools.count() == 0


def test_charlie_cannot_see_alices_private_tools(client, charlie, alice_private_server, make_tool):
    secret = make_tool(alice_private_server, "read_note")
    client.force_login(charlie)

    assert b"read_note" not in client.get("/tools/").content
    assert client.get(f"/tools/{secret.pk}/").status_code == 404


def test_toggling_a_tool_returns_the_row_and_the_new_budget(as_alice, alice, tools):
    endpoint = alice.endpoints.get()

    response = as_alice.post(
        f"/endpoints/{endpoint.slug}/tools/{tools['convert'].pk}/toggle/", {"enabled": "on"}, **HTMX
    )

    body = response.content.decode()
    assert 'id="budget"' in body and 'hx-swap-oob="true"' in body
    assert "300 / 20000 tokens" in body
    assert [t.name for t in endpoint.tools.all()] == ["convert"]


def test_going_over_budget_is_refused_with_the_amount(as_alice, alice, tools):
    endpoint = alice.endpoints.get()
    endpoint.token_budget = 500
    endpoint.save()

    body = as_alice.post(
        f"/endpoints/{endpoint.slug}/tools/{tools['zones'].pk}/toggle/", {"enabled": "on"}, **HTMX
    )

    assert "100 over" in body.content.decode()
    assert endpoint.tools.count() == 0


def test_search_returns_only_matching_tools(as_alice, alice, tools):
    body = as_alice.get(
        f"/endpoints/{alice.endpoints.get().slug}/tools/?q=conv", **HTMX
    ).content.decode()

    assert "convert" in body and "zones" not in body


def test_a_server_toggle_enables_all_its_tools(as_alice, alice, tools):
    endpoint = alice.endpoints.get()

    as_alice.post(f"/endpoints/{endpoint.slug}/servers/time/toggle/", {"enabled": "on"}, **HTMX)

    assert endpoint.tools.count() == 3


def test_tool_details_show_the_schema(as_alice, tools):
    body = as_alice.get(f"/tools/{tools['now'].pk}/", **HTMX).content.decode()

    assert "Input schema" in body and "&quot;type&quot;: &quot;object&quot;" in body


def test_a_new_token_is_shown_once_in_the_snippets_after_a_redirect(as_alice, alice):
    endpoint = alice.endpoints.get()

    response = as_alice.post(f"/endpoints/{endpoint.slug}/", {"name": "laptop"})
    token = AccessToken.objects.get(user=alice, name="laptop")
    assert (
        response.status_code == 302 and response["Location"] == f"/endpoints/{endpoint.slug}/#token"
    )
    assert f"mcphub_{token.prefix}_".encode() not in response.content

    first = as_alice.get(f"/endpoints/{endpoint.slug}/").content.decode()
    assert f"mcphub_{token.prefix}_" in first
    assert "claude mcp add --transport http mcphub" in first
    assert (
        f"mcphub_{token.prefix}_"
        not in as_alice.get(f"/endpoints/{endpoint.slug}/").content.decode()
    )
    assert AccessToken.objects.filter(user=alice).count() == 1


def test_the_raw_token_waits_in_the_session_encrypted(as_alice, alice):
    endpoint = alice.endpoints.get()

    as_alice.post(f"/endpoints/{endpoint.slug}/", {"name": "laptop"})

    token = AccessToken.objects.get(user=alice, name="laptop")
    assert f"mcphub_{token.prefix}_" not in str(dict(as_alice.session))


def test_a_bad_token_name_creates_nothing_and_says_why(as_alice, alice):
    endpoint = alice.endpoints.get()

    response = as_alice.post(f"/endpoints/{endpoint.slug}/", {"name": "x" * 101}, follow=True)

    assert "Token not created" in response.content.decode()
    assert not AccessToken.objects.filter(user=alice).exists()


def test_saving_and_sharing_a_preset_lets_bob_load_it(as_alice, alice, bob, team, tools, client):
    enable_tools(endpoint=alice.endpoints.get(), tools=[tools["now"], tools["convert"]])
    as_alice.post("/presets/save/", {"name": "review", "team": team.pk})
    preset = Preset.objects.get(name="review")
    assert preset.team == team

    client.force_login(bob)
    bob_endpoint = bob.endpoints.get()
    client.post(f"/presets/{preset.pk}/load/", {"endpoint": bob_endpoint.slug, "mode": "replace"})

    assert sorted(t.name for t in bob_endpoint.tools.all()) == ["convert", "now"]


def test_bob_cannot_roll_back_or_delete_alices_preset(client, bob, alice, team):
    preset = create_preset(owner=alice, name="review", tool_keys=["time.now"], team=team)
    client.force_login(bob)

    assert client.post(f"/presets/{preset.pk}/rollback/", {"version": 1}).status_code == 403
    assert client.post(f"/presets/{preset.pk}/delete/").status_code == 403
    assert Preset.objects.filter(pk=preset.pk).exists()


def test_the_preset_page_shows_a_diff_and_rolls_back(as_alice, alice):
    from apps.toolsets.services import update_preset

    preset = create_preset(owner=alice, name="review", tool_keys=["time.now"])
    update_preset(preset=preset, user=alice, tool_keys=["time.zones"])

    page = as_alice.get(f"/presets/{preset.pk}/").content.decode()
    assert 'class="diff-add"><span aria-hidden="true">+</span> time.zones' in page
    as_alice.post(f"/presets/{preset.pk}/rollback/", {"version": 1})
    assert preset.latest_version.tool_keys == ["time.now"]


def test_the_servers_page_is_for_staff(client, alice, admin_user, global_server):
    client.force_login(alice)
    assert client.get("/servers/").status_code == 403

    client.force_login(admin_user)
    assert b"time" in client.get("/servers/").content


def test_every_page_has_an_icon_and_favicon_ico_finds_it(client, db):
    page = client.get("/login/").content.decode()
    assert 'rel="icon" href="/static/favicon.svg"' in page

    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    from django.contrib.staticfiles import finders

    assert finders.find("favicon.svg")  # collected with the other static files
