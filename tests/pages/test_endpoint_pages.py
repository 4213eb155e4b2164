"""Endpoints on the pages: alice creates, renames, reconfigures and deletes hers; never the default; never charlie's."""

from __future__ import annotations

import pytest

from apps.accounts.services import create_access_token
from apps.toolsets.models import Endpoint
from apps.toolsets.services import create_endpoint

SETTINGS = {
    "name": "Research",
    "naming_strategy": "prefixed",
    "mode": "dynamic",
    "token_budget": "4000",
    "approval": "all",
}


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def work(alice) -> Endpoint:
    return create_endpoint(owner=alice, name="Work")


def test_alice_creates_an_endpoint_with_its_settings(as_alice, alice):
    response = as_alice.post("/endpoint/new/", {**SETTINGS, "budget_enforced": "on"}, follow=True)

    endpoint = alice.endpoints.get(name="Research")
    assert response.redirect_chain[-1][0] == f"/endpoints/{endpoint.slug}/"
    assert (
        endpoint.naming_strategy,
        endpoint.mode,
        endpoint.token_budget,
        endpoint.budget_enforced,
        endpoint.approval,
    ) == ("prefixed", "dynamic", 4000, True, "all")
    assert "Endpoint “Research” created" in response.content.decode()


def test_the_new_endpoint_form_starts_from_the_defaults(as_alice, settings):
    settings.MCPHUB_DEFAULT_TOKEN_BUDGET = 12345

    page = as_alice.get("/endpoint/new/").content.decode()

    assert 'value="12345"' in page and '<option value="hybrid" selected>' in page
    assert 'name="budget_enforced" checked' in page
    assert '<option value="destructive" selected>' in page  # asks before tools that may change data


def test_a_bad_new_endpoint_is_refused_with_the_reason_and_nothing_is_created(as_alice, alice):
    response = as_alice.post("/endpoint/new/", {**SETTINGS, "name": "", "mode": "sideways"})

    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert "sideways is not one of the available choices" in response.content.decode()
    assert alice.endpoints.count() == 1


def test_alice_renames_and_reconfigures_an_endpoint(as_alice, work):
    as_alice.post(f"/endpoints/{work.slug}/settings/", {**SETTINGS, "name": "Work (new)"})

    work.refresh_from_db()
    assert (
        work.name,
        work.naming_strategy,
        work.mode,
        work.token_budget,
        work.budget_enforced,
        work.approval,
    ) == ("Work (new)", "prefixed", "dynamic", 4000, False, "all")


def test_the_settings_form_shows_the_current_settings(as_alice, work):
    work.mode, work.naming_strategy = "dynamic", "prefixed"
    work.save()

    page = as_alice.get(f"/endpoints/{work.slug}/").content.decode()

    assert (
        '<option value="dynamic" selected>' in page and '<option value="prefixed" selected>' in page
    )


def test_the_mode_help_says_what_clients_list_and_what_it_costs(
    as_alice, work, make_tool, global_server
):
    from apps.gateway.dynamic import META_TOKENS
    from apps.toolsets.services import enable_tools

    enable_tools(endpoint=work, tools=[make_tool(global_server, "now", 120)])

    page = as_alice.get(f"/endpoints/{work.slug}/").content.decode()

    assert "clients list every tool you enabled here (~120 tokens)" in page
    assert "plus four tools to search the rest" in page and f"(~{120 + META_TOKENS} tokens)" in page
    assert "lists only search/load tools" not in page


def test_bad_settings_change_nothing_and_say_why(as_alice, work):
    response = as_alice.post(
        f"/endpoints/{work.slug}/settings/", {**SETTINGS, "token_budget": "-5"}, follow=True
    )

    work.refresh_from_db()
    assert work.token_budget != -5 and work.name == "Work"
    assert (
        "Token budget: Ensure this value is greater than or equal to 0."
        in response.content.decode()
    )


def test_deleting_asks_first_and_says_what_goes(as_alice, alice, work):
    create_access_token(user=alice, name="cursor", endpoint=work)

    page = as_alice.get(f"/endpoints/{work.slug}/delete/").content.decode()

    assert (
        "Delete “Work”?" in page
        and "1 active token scoped to this endpoint will be deleted" in page
    )
    assert Endpoint.objects.filter(pk=work.pk).exists()


def test_confirming_deletes_the_endpoint_and_its_tokens(as_alice, alice, work):
    create_access_token(user=alice, name="cursor", endpoint=work)

    response = as_alice.post(f"/endpoints/{work.slug}/delete/", follow=True)

    assert response.redirect_chain[-1][0] == "/"
    assert not Endpoint.objects.filter(pk=work.pk).exists()
    assert not alice.access_tokens.filter(name="cursor").exists()
    assert "Endpoint “Work” deleted." in response.content.decode()


def test_the_default_endpoint_cannot_be_deleted(as_alice, alice):
    default = alice.endpoints.get(is_default=True)

    page = as_alice.get(f"/endpoints/{default.slug}/").content.decode()
    response = as_alice.post(f"/endpoints/{default.slug}/delete/", follow=True)

    assert "it cannot be deleted" in page and f"/endpoints/{default.slug}/delete/" not in page
    assert Endpoint.objects.filter(pk=default.pk).exists()
    assert "The default endpoint cannot be deleted." in response.content.decode()


def test_charlie_can_neither_change_nor_delete_alices_endpoint(client, charlie, work):
    client.force_login(charlie)

    assert client.post(f"/endpoints/{work.slug}/settings/", SETTINGS).status_code == 404
    assert client.get(f"/endpoints/{work.slug}/delete/").status_code == 404
    assert client.post(f"/endpoints/{work.slug}/delete/").status_code == 404
    work.refresh_from_db()
    assert work.name == "Work"


@pytest.mark.parametrize("path", ["/endpoint/new/", "/endpoints/any-slug/delete/"])
def test_anonymous_visitors_are_sent_to_sign_in(client, db, path):
    assert client.get(path)["Location"].startswith("/login/")
