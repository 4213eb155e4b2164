"""Every registered admin model: staff get working pages, charlie (not staff) gets the login page."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

from apps.catalog.models import Prompt, Resource, ResourceTemplate, Tool
from apps.credentials.models import UserCredential
from apps.credentials.upstream.models import UpstreamOAuthClient, UpstreamOAuthGrant
from apps.toolsets.models import ToolCall

REGISTERED = sorted(admin.site._registry, key=lambda model: model._meta.label)
# Discovery, the gateway's call log, upstream OAuth sign-ins, sign-in attempts (django-axes), the
# audit trail and the OAuth flow (codes, tokens stored as checksums, connected apps) fill these in;
# nobody adds them by hand (nor another user's credentials: each user fills their own).
DISCOVERED = (
    {
        Tool,
        Resource,
        ResourceTemplate,
        Prompt,
        ToolCall,
        UserCredential,
        UpstreamOAuthClient,
        UpstreamOAuthGrant,
    }
    | {
        model
        for model in REGISTERED
        if model._meta.app_label in ("axes", "auditlog", "audit", "oauth")
    }
    | {
        model
        for model in REGISTERED
        if model._meta.app_label == "oauth2_provider" and model._meta.model_name != "application"
    }
)


def admin_url(model, view: str) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}")


@pytest.mark.parametrize("model", REGISTERED, ids=lambda model: model._meta.label)
def test_admin_sees_the_changelist(
    client, admin_user, model, global_server, alice_private_server, alice_token
):
    client.force_login(admin_user)

    assert client.get(admin_url(model, "changelist")).status_code == 200


@pytest.mark.parametrize("model", REGISTERED, ids=lambda model: model._meta.label)
def test_admin_sees_the_add_page_except_for_discovered_items(client, admin_user, model):
    client.force_login(admin_user)

    response = client.get(admin_url(model, "add"))

    assert response.status_code == (403 if model in DISCOVERED else 200)


@pytest.mark.parametrize("model", REGISTERED, ids=lambda model: model._meta.label)
@pytest.mark.parametrize("view", ["changelist", "add"])
def test_charlie_is_sent_to_the_login_page(client, charlie, model, view):
    client.force_login(charlie)

    response = client.get(admin_url(model, view))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_every_hub_model_is_registered():
    labels = {model._meta.label for model in REGISTERED}

    assert {
        "accounts.User",
        "accounts.Team",
        "accounts.AccessToken",
        "catalog.McpServer",
        "catalog.Tool",
        "catalog.Resource",
        "catalog.ResourceTemplate",
        "catalog.Prompt",
        "toolsets.Endpoint",
        "toolsets.Preset",
    } <= labels
