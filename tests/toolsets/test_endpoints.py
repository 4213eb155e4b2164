"""Every user gets a default endpoint; enabling tools respects the token budget."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from apps.accounts.models import User
from apps.catalog.models import McpServer
from apps.toolsets.models import Endpoint
from apps.toolsets.selectors import default_endpoint_for
from apps.toolsets.services import (
    BudgetExceeded,
    create_endpoint,
    enable_tools,
    enabled_token_total,
    ensure_default_endpoint,
    save_preset_version,
    set_enabled_tools,
)


def test_a_new_user_gets_one_default_endpoint(db):
    user = User.objects.create_user("dora")

    endpoint = user.endpoints.get()
    assert endpoint.is_default
    assert endpoint.path == f"/mcp/{endpoint.slug}/"
    assert ensure_default_endpoint(user=user) == endpoint


def test_a_user_cannot_have_two_default_endpoints(alice):
    with pytest.raises(IntegrityError), transaction.atomic():
        Endpoint.objects.create(owner=alice, slug="second-default", name="x", is_default=True)


def test_endpoint_slugs_are_unique_across_users(alice, bob):
    create_endpoint(owner=alice, name="work", slug="work-endpoint")
    with pytest.raises(IntegrityError):
        create_endpoint(owner=bob, name="work", slug="work-endpoint")


def test_enabling_beyond_the_budget_is_refused_and_changes_nothing(alice, global_server, make_tool):
    endpoint = alice.endpoints.get()
    endpoint.token_budget = 250
    endpoint.save()
    small, big = make_tool(global_server, "small", 100), make_tool(global_server, "big", 200)
    enable_tools(endpoint=endpoint, tools=[small])

    with pytest.raises(BudgetExceeded, match="50 over"):
        enable_tools(endpoint=endpoint, tools=[big])

    assert list(endpoint.tools.all()) == [small]
    assert enabled_token_total(endpoint) == 100


def test_warn_only_endpoints_accept_tools_beyond_the_budget(alice, global_server, make_tool):
    endpoint = alice.endpoints.get()
    endpoint.token_budget, endpoint.budget_enforced = 10, False
    endpoint.save()

    set_enabled_tools(endpoint=endpoint, tools=[make_tool(global_server, "big", 200)])

    assert enabled_token_total(endpoint) == 200


def test_replacing_the_enabled_set_keeps_overrides_of_kept_tools(alice, global_server, make_tool):
    endpoint = alice.endpoints.get()
    keep, drop = make_tool(global_server, "keep"), make_tool(global_server, "drop")
    set_enabled_tools(endpoint=endpoint, tools=[keep, drop])
    endpoint.endpoint_tools.filter(tool=keep).update(name_override="my_keep")

    set_enabled_tools(endpoint=endpoint, tools=[keep])

    assert [(et.tool, et.name_override) for et in endpoint.endpoint_tools.all()] == [
        (keep, "my_keep")
    ]


def test_each_preset_save_is_a_new_version(alice):
    from apps.toolsets.models import Preset

    preset = Preset.objects.create(name="review", owner=alice)
    first = save_preset_version(preset=preset, tool_keys=["github.search", "time.now"], user=alice)
    second = save_preset_version(preset=preset, tool_keys=["time.now"], user=alice)

    assert (first.number, second.number) == (1, 2)
    assert preset.latest_version == second
    assert preset.versions.get(number=1).tool_keys == ["github.search", "time.now"]


def test_deleting_a_server_never_deletes_preset_versions(alice, make_tool):
    from apps.toolsets.models import Preset

    server = McpServer.objects.create(name="gh", command="x")
    make_tool(server, "search")
    preset = Preset.objects.create(name="p", owner=alice)
    save_preset_version(preset=preset, tool_keys=["gh.search"], user=alice)

    server.delete()

    assert preset.latest_version.tool_keys == ["gh.search"]


def test_the_default_endpoint_is_the_owners_own_loaded_whole(alice, bob):
    alices = Endpoint.objects.get(owner=alice, is_default=True)
    found = default_endpoint_for(alice)
    assert found == alices and found.owner_id == alice.pk and found.slug == alices.slug
    assert found.get_deferred_fields() == set()
    assert default_endpoint_for(bob) == Endpoint.objects.get(owner=bob, is_default=True)
    Endpoint.objects.filter(owner=bob).update(is_default=False)
    assert default_endpoint_for(bob) is None  # not alice's, nor any other
