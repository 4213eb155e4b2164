"""Alice saves under the name of one of her presets: a new version with its diff, never a second preset."""

from __future__ import annotations

import pytest

from apps.toolsets.models import Preset
from apps.toolsets.services import create_preset, enable_tools, set_enabled_tools, update_preset


@pytest.fixture
def tools(global_server, make_tool):
    return {name: make_tool(global_server, name) for name in ("now", "convert", "zones")}


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


def test_saving_under_an_existing_name_adds_a_version_and_shows_the_diff(as_alice, alice, tools):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[tools["now"], tools["convert"]])
    as_alice.post("/presets/save/", {"name": "Time & memory", "endpoint": endpoint.slug})
    set_enabled_tools(endpoint=endpoint, tools=[tools["now"], tools["zones"]])

    response = as_alice.post(
        "/presets/save/", {"name": "time & memory", "endpoint": endpoint.slug}, follow=True
    )

    preset = Preset.objects.get(owner=alice)
    assert [v.number for v in preset.versions.all()] == [2, 1]
    assert response.redirect_chain[-1][0] == f"/presets/{preset.pk}/?from=1&to=2"
    page = response.content.decode()
    assert "Saved “Time &amp; memory” v2: 1 added, 1 removed since v1." in page
    assert '<span aria-hidden="true">+</span> time.zones' in page
    assert '<span aria-hidden="true">−</span> time.convert' in page


def test_saving_the_same_tools_again_adds_no_version(as_alice, alice, tools):
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=[tools["now"]])
    as_alice.post("/presets/save/", {"name": "review"})

    response = as_alice.post("/presets/save/", {"name": "review"}, follow=True)

    assert Preset.objects.get(owner=alice).versions.count() == 1
    assert "already has exactly these 1 tools: no new version saved" in response.content.decode()


def test_a_name_only_bob_uses_makes_alice_her_own_preset(as_alice, alice, bob, team, tools):
    bobs = create_preset(owner=bob, name="review", tool_keys=["time.now"], team=team)
    enable_tools(endpoint=alice.endpoints.get(), tools=[tools["convert"]])

    as_alice.post("/presets/save/", {"name": "review"})

    assert bobs.versions.count() == 1
    assert Preset.objects.get(owner=alice, name="review").latest_version.tool_keys == [
        "time.convert"
    ]


def test_saving_a_new_version_with_a_team_shares_it(as_alice, alice, team, tools):
    enable_tools(endpoint=alice.endpoints.get(), tools=[tools["now"]])
    as_alice.post("/presets/save/", {"name": "review"})
    enable_tools(endpoint=alice.endpoints.get(), tools=[tools["zones"]])

    as_alice.post("/presets/save/", {"name": "review", "team": team.pk})

    preset = Preset.objects.get(owner=alice)
    assert (preset.team, preset.versions.count()) == (team, 2)


def test_the_presets_page_counts_versions_and_offers_own_names(as_alice, alice):
    preset = create_preset(owner=alice, name="review", tool_keys=["time.now"])
    create_preset(owner=alice, name="other", tool_keys=[])
    update_preset(preset=preset, user=alice, tool_keys=["time.zones"])

    page = as_alice.get("/presets/").content.decode()

    assert "2 versions · diff · roll back" in page
    assert '<option value="other"><option value="review">' in page
