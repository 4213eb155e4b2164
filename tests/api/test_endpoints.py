"""Endpoints: alice manages her own; bob and charlie cannot even see them."""

from __future__ import annotations

import pytest


def test_alice_creates_an_endpoint_with_a_derived_slug(as_alice):
    # No SITE_URL: the URL is the one alice reached the hub at, whatever its port.
    response = as_alice.post(
        "/api/endpoints/",
        {"name": "Work", "token_budget": 5000},
        format="json",
        HTTP_HOST="localhost:18431",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["slug"].startswith("work-")
    assert body["url"] == f"http://localhost:18431/mcp/{body['slug']}/"
    assert body["budget"] == {
        "used": 0,
        "limit": 5000,
        "enforced": True,
        "over_by": 0,
        "percent": 0,
        "state": "ok",
    }


def test_an_endpoint_shows_its_url_and_client_snippets(as_alice, alice_endpoint, settings):
    settings.SITE_URL = "https://hub.example.com"

    body = as_alice.get(f"/api/endpoints/{alice_endpoint.slug}/").json()

    url = f"https://hub.example.com/mcp/{alice_endpoint.slug}/"
    assert body["url"] == url
    assert body["snippets"]["claude_code"] == (
        f'claude mcp add --transport http mcphub {url} --header "Authorization: Bearer YOUR_TOKEN"'
    )
    assert url in body["snippets"]["cursor"] and url in body["snippets"]["vscode"]
    assert "mcp-remote" in body["snippets"]["claude_desktop"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x", "slug": "A bad slug"}, "slug"),
        ({"name": "x", "token_budget": -1}, "token_budget"),
        ({"name": "x", "mode": "sideways"}, "mode"),
        ({"name": "x", "naming_strategy": "random"}, "naming_strategy"),
    ],
)
def test_bad_endpoint_input_gets_a_field_error(as_alice, payload, field):
    response = as_alice.post("/api/endpoints/", payload, format="json")

    assert response.status_code == 400
    assert field in response.json()


def test_a_taken_slug_is_refused(as_alice, as_bob, alice_endpoint):
    response = as_bob.post(
        "/api/endpoints/", {"name": "x", "slug": alice_endpoint.slug}, format="json"
    )

    assert response.status_code == 400
    assert "taken" in response.json()["slug"][0]


def test_alice_updates_her_endpoint_but_not_its_slug(as_alice, alice_endpoint):
    url = f"/api/endpoints/{alice_endpoint.slug}/"

    assert (
        as_alice.patch(url, {"token_budget": 900, "mode": "dynamic"}, format="json").status_code
        == 200
    )
    assert as_alice.patch(url, {"slug": "renamed-slug"}, format="json").status_code == 400
    alice_endpoint.refresh_from_db()
    assert (alice_endpoint.token_budget, alice_endpoint.mode) == (900, "dynamic")


def test_the_default_endpoint_cannot_be_deleted_but_others_can(as_alice, alice, alice_endpoint):
    other = as_alice.post(
        "/api/endpoints/", {"name": "Scratch", "slug": "alice-scratch"}, format="json"
    ).json()

    assert as_alice.delete(f"/api/endpoints/{alice_endpoint.slug}/").status_code == 400
    assert as_alice.delete(f"/api/endpoints/{other['slug']}/").status_code == 204
    assert list(alice.endpoints.values_list("slug", flat=True)) == [alice_endpoint.slug]


@pytest.mark.parametrize("persona", ["as_bob", "as_charlie"])
@pytest.mark.parametrize(
    ("method", "suffix", "payload"),
    [
        ("get", "", None),
        ("patch", "", {"name": "mine now"}),
        ("delete", "", None),
        ("get", "tools/", None),
        ("get", "enabled-tools/", None),
        ("put", "enabled-tools/", {"tools": []}),
        ("patch", "tools/time.now/", {"enabled": True}),
        ("get", "presets/", None),
    ],
)
def test_nobody_else_can_see_or_touch_alices_endpoint(
    request, persona, method, suffix, payload, alice_enabled
):
    client = request.getfixturevalue(persona)

    response = getattr(client, method)(
        f"/api/endpoints/{alice_enabled.slug}/{suffix}", payload, format="json"
    )

    assert response.status_code == 404
    assert alice_enabled.tools.count() == 1


def test_anonymous_cannot_list_endpoints_or_read_one(anonymous, alice_endpoint):
    assert anonymous.get("/api/endpoints/").status_code == 401
    assert anonymous.get(f"/api/endpoints/{alice_endpoint.slug}/").status_code == 401


def test_each_user_lists_only_their_own_endpoints(as_bob, alice_endpoint, bob):
    slugs = [e["slug"] for e in as_bob.get("/api/endpoints/").json()["results"]]

    assert slugs == [bob.endpoints.get().slug]
