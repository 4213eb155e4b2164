"""Charlie sees nothing of alice's private servers, endpoints or presets; bob sees what alice shares."""

from __future__ import annotations

from apps.catalog.models import McpServer
from apps.catalog.selectors import visible_servers, visible_tools
from apps.toolsets.models import Preset
from apps.toolsets.selectors import visible_endpoints, visible_presets


def test_private_servers_and_their_tools_are_the_owners_alone(
    alice, bob, charlie, alice_private_server, global_server, make_tool
):
    make_tool(alice_private_server, "read_note")
    make_tool(global_server, "now")

    assert set(visible_servers(alice)) == {alice_private_server, global_server}
    assert set(visible_servers(bob)) == {global_server}
    assert set(visible_servers(charlie)) == {global_server}
    assert [t.key for t in visible_tools(charlie)] == ["time.now"]


def test_team_servers_are_seen_by_the_team_only(alice, bob, charlie, team):
    server = McpServer.objects.create(
        name="team-db", command="x", visibility="team", team=team, owner=alice
    )

    assert server in visible_servers(bob)
    assert server not in visible_servers(charlie)


def test_staff_see_every_server(admin_user, alice_private_server):
    assert alice_private_server in visible_servers(admin_user)


def test_endpoints_are_private_to_their_owner(alice, bob, charlie, team):
    assert list(visible_endpoints(alice)) == list(alice.endpoints.all())
    assert not visible_endpoints(charlie).filter(owner=alice).exists()
    assert not visible_endpoints(bob).filter(owner=alice).exists()


def test_team_presets_are_shared_and_private_ones_are_not(alice, bob, charlie, team):
    shared = Preset.objects.create(name="review", owner=alice, team=team, visibility="team")
    private = Preset.objects.create(name="mine", owner=alice)

    assert set(visible_presets(alice)) == {shared, private}
    assert set(visible_presets(bob)) == {shared}
    assert set(visible_presets(charlie)) == set()


def test_deleting_a_member_keeps_the_presets_they_shared(alice, bob, team):
    shared = Preset.objects.create(name="bob's review", owner=bob, team=team, visibility="team")

    bob.delete()

    shared.refresh_from_db()
    assert shared.owner is None
    assert shared in visible_presets(alice)
