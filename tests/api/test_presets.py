"""Presets: alice saves and shares; bob (her team) sees and loads; charlie sees nothing; nothing saved is lost."""

from __future__ import annotations

import pytest

from apps.toolsets.models import Preset
from apps.toolsets.services import create_preset


@pytest.fixture
def review(alice, team):
    """Alice's 'review' preset shared with her team, at version 2."""
    preset = create_preset(owner=alice, name="review", tool_keys=["time.now"], team=team)
    from apps.toolsets.services import update_preset

    update_preset(preset=preset, user=alice, tool_keys=["time.now", "time.convert"])
    return preset


def test_alice_saves_a_preset_from_keys(as_alice):
    response = as_alice.post(
        "/api/presets/", {"name": "mine", "tool_keys": ["time.now", "time.now"]}, format="json"
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["owner"], body["visibility"], body["version"], body["tool_keys"]) == (
        "alice",
        "private",
        1,
        ["time.now"],
    )


def test_alice_saves_her_current_selection(as_alice, alice_enabled):
    body = as_alice.post(
        "/api/presets/", {"name": "now", "from_endpoint": alice_enabled.slug}, format="json"
    ).json()

    assert body["tool_keys"] == ["time.now"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"tool_keys": []}, "name"),
        ({"name": "x", "tool_keys": ["no-dot"]}, "tool_keys"),
        ({"name": "x", "from_endpoint": "someone-elses"}, "from_endpoint"),
        ({"name": "x", "share_with": "not-my-team"}, "share_with"),
    ],
)
def test_bad_preset_input_gets_a_field_error(as_alice, payload, field):
    response = as_alice.post("/api/presets/", payload, format="json")

    assert response.status_code == 400
    assert field in response.json()


def test_sharing_with_the_team_lets_bob_see_it_and_not_charlie(
    as_alice, as_bob, as_charlie, alice, team
):
    preset = create_preset(owner=alice, name="solo", tool_keys=["time.now"])
    assert as_bob.get(f"/api/presets/{preset.pk}/").status_code == 404

    response = as_alice.post(f"/api/presets/{preset.pk}/share/", {"team": team.slug}, format="json")

    assert response.json()["team"] == team.slug
    assert as_bob.get(f"/api/presets/{preset.pk}/").status_code == 200
    assert as_charlie.get(f"/api/presets/{preset.pk}/").status_code == 404
    assert as_charlie.get("/api/presets/").json()["results"] == []


def test_only_members_may_share_with_a_team(as_charlie, charlie, team):
    preset = create_preset(owner=charlie, name="c", tool_keys=[])

    response = as_charlie.post(
        f"/api/presets/{preset.pk}/share/", {"team": team.slug}, format="json"
    )

    assert response.status_code == 400
    assert Preset.objects.get(pk=preset.pk).team is None


def test_bob_loads_a_shared_preset_onto_his_endpoint(as_bob, bob, review, time_tools):
    endpoint = bob.endpoints.get()

    response = as_bob.post(
        f"/api/presets/{review.pk}/load/", {"endpoint": endpoint.slug}, format="json"
    )

    assert response.status_code == 200, response.json()
    assert sorted(response.json()["loaded"]) == ["time.convert", "time.now"]
    assert sorted(t.key for t in endpoint.tools.all()) == ["time.convert", "time.now"]


def test_loading_merges_or_replaces(as_bob, bob, review, time_tools):
    endpoint = bob.endpoints.get()
    endpoint.tools.add(time_tools["zones"])
    url = f"/api/endpoints/{endpoint.slug}/load-preset/"

    as_bob.post(url, {"preset": review.pk, "version": 1, "mode": "merge"}, format="json")
    assert sorted(t.key for t in endpoint.tools.all()) == ["time.now", "time.zones"]

    as_bob.post(url, {"preset": review.pk, "mode": "replace"}, format="json")
    assert sorted(t.key for t in endpoint.tools.all()) == ["time.convert", "time.now"]


def test_loading_reports_tools_that_are_gone(as_bob, bob, alice, time_tools):
    preset = create_preset(owner=bob, name="old", tool_keys=["time.now", "gone.tool"])

    body = as_bob.post(
        f"/api/presets/{preset.pk}/load/", {"endpoint": bob.endpoints.get().slug}, format="json"
    ).json()

    assert (body["loaded"], body["missing"]) == (["time.now"], ["gone.tool"])


def test_loading_beyond_the_budget_is_refused(as_bob, bob, review, time_tools):
    endpoint = bob.endpoints.get()
    endpoint.token_budget = 150
    endpoint.save()

    response = as_bob.post(
        f"/api/presets/{review.pk}/load/", {"endpoint": endpoint.slug}, format="json"
    )

    assert response.status_code == 409
    assert response.json()["over_by"] == 250
    assert endpoint.tools.count() == 0


def test_nobody_loads_onto_someone_elses_endpoint(as_bob, alice_endpoint, review):
    response = as_bob.post(
        f"/api/presets/{review.pk}/load/", {"endpoint": alice_endpoint.slug}, format="json"
    )

    assert response.status_code == 400
    assert alice_endpoint.tools.count() == 0


def test_charlie_cannot_load_alices_preset(as_charlie, charlie, review):
    endpoint = charlie.endpoints.get()

    response = as_charlie.post(
        f"/api/endpoints/{endpoint.slug}/load-preset/", {"preset": review.pk}, format="json"
    )

    assert response.status_code == 400
    assert "preset" in response.json()


def test_the_endpoint_lists_presets_its_owner_may_load(as_bob, bob, review):
    body = as_bob.get(f"/api/endpoints/{bob.endpoints.get().slug}/presets/").json()

    assert [p["name"] for p in body["results"]] == ["review"]


def test_bob_may_read_but_not_change_alices_shared_preset(as_bob, review):
    url = f"/api/presets/{review.pk}/"

    assert as_bob.patch(url, {"name": "bob's now"}, format="json").status_code == 403
    assert as_bob.delete(url).status_code == 403
    assert as_bob.post(f"{url}rollback/", {"version": 1}, format="json").status_code == 403
    assert Preset.objects.get(pk=review.pk).name == "review"


def test_anonymous_gets_nothing(anonymous, review):
    assert anonymous.get("/api/presets/").status_code == 401
    assert anonymous.get(f"/api/presets/{review.pk}/").status_code == 401


def test_every_change_of_tools_is_a_new_version(as_alice, review):
    url = f"/api/presets/{review.pk}/"

    as_alice.patch(url, {"tool_keys": ["time.zones"], "note": "zones only"}, format="json")
    as_alice.patch(url, {"description": "renamed, same tools"}, format="json")

    versions = as_alice.get(f"{url}versions/").json()
    assert [(v["number"], v["tool_keys"]) for v in versions] == [
        (3, ["time.zones"]),
        (2, ["time.convert", "time.now"]),
        (1, ["time.now"]),
    ]
    assert versions[0]["note"] == "zones only"
    assert versions[0]["created_by"] == "alice"


def test_diff_between_versions(as_alice, as_bob, review):
    as_alice.patch(
        f"/api/presets/{review.pk}/", {"tool_keys": ["time.zones", "time.now"]}, format="json"
    )

    latest = as_bob.get(f"/api/presets/{review.pk}/diff/").json()
    assert latest == {
        "from_version": 2,
        "to_version": 3,
        "added": ["time.zones"],
        "removed": ["time.convert"],
        "unchanged": ["time.now"],
    }
    assert as_bob.get(f"/api/presets/{review.pk}/diff/?from=1&to=2").json()["added"] == [
        "time.convert"
    ]
    assert as_bob.get(f"/api/presets/{review.pk}/diff/?from=9").status_code == 400
    assert as_bob.get(f"/api/presets/{review.pk}/diff/?from=x").status_code == 400


def test_rollback_appends_a_copy_of_the_old_version(as_alice, review):
    response = as_alice.post(f"/api/presets/{review.pk}/rollback/", {"version": 1}, format="json")

    assert response.status_code == 201
    assert (response.json()["number"], response.json()["tool_keys"]) == (3, ["time.now"])
    assert review.versions.count() == 3
    assert (
        as_alice.post(
            f"/api/presets/{review.pk}/rollback/", {"version": 42}, format="json"
        ).status_code
        == 400
    )


def test_deleting_a_member_never_deletes_the_presets_they_shared(as_alice, bob, team):
    shared = create_preset(owner=bob, name="bob's", tool_keys=["time.now"], team=team)

    bob.delete()

    body = as_alice.get(f"/api/presets/{shared.pk}/").json()
    assert (body["name"], body["owner"], body["tool_keys"]) == ("bob's", None, ["time.now"])


def test_team_owners_may_look_after_a_departed_members_preset(as_alice, bob, team):
    shared = create_preset(owner=bob, name="bob's", tool_keys=["time.now"], team=team)
    bob.delete()

    response = as_alice.patch(
        f"/api/presets/{shared.pk}/", {"tool_keys": ["time.zones"]}, format="json"
    )

    assert response.status_code == 200


def test_unsharing_and_deleting(as_alice, as_bob, review):
    as_alice.post(f"/api/presets/{review.pk}/unshare/")
    assert as_bob.get(f"/api/presets/{review.pk}/").status_code == 404

    assert as_alice.delete(f"/api/presets/{review.pk}/").status_code == 204
    assert not Preset.objects.filter(pk=review.pk).exists()
