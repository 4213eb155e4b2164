"""Teams from the pages: alice creates one and adds people; its owners and admins manage it; a
member may leave; a team keeps an owner; charlie sees nothing of it."""

from __future__ import annotations

import pytest

from apps.accounts.models import Membership, Team

pytestmark = pytest.mark.django_db


def signed_in(client, user):
    client.force_login(user)
    return client


def roles(team: Team) -> dict[str, str]:
    return dict(team.memberships.values_list("user__username", "role"))


def flash(response) -> str:
    return " ".join(str(m) for m in response.context["messages"])


def test_alice_creates_a_team_and_adds_bob_by_email(client, alice, bob):
    as_alice = signed_in(client, alice)
    response = as_alice.post("/teams/new/", {"name": "Platform team"}, follow=True)

    team = Team.objects.get(name="Platform team")
    assert response.redirect_chain[-1][0] == f"/teams/{team.slug}/" and team.slug == "platform-team"
    response = as_alice.post(
        f"/teams/{team.slug}/members/", {"who": "BOB@example.com"}, follow=True
    )

    assert "bob is now a member of Platform team." in flash(response)
    assert roles(team) == {"alice": "owner", "bob": "member"}
    assert "Add member" in response.content.decode()


def test_the_presets_page_says_where_teams_come_from(client, charlie):
    page = signed_in(client, charlie).get("/presets/").content.decode()

    assert "you are in none yet" in page and 'href="/teams/"' in page


def test_adding_someone_unknown_or_already_in_changes_nothing_and_says_why(client, alice, team):
    as_alice = signed_in(client, alice)

    unknown = flash(as_alice.post(f"/teams/{team.slug}/members/", {"who": "nobody"}, follow=True))
    again = flash(as_alice.post(f"/teams/{team.slug}/members/", {"who": "bob"}, follow=True))

    assert "No single active user has the username or email 'nobody'." in unknown
    assert "bob is already in Alice's team." in again
    assert roles(team) == {"alice": "owner", "bob": "member"}


def test_a_member_may_not_add_or_remove_and_sees_no_form(client, bob, charlie, alice, team):
    as_bob = signed_in(client, bob)

    assert "Add someone" not in as_bob.get(f"/teams/{team.slug}/").content.decode()
    refused = flash(as_bob.post(f"/teams/{team.slug}/members/", {"who": "charlie"}, follow=True))
    also = flash(as_bob.post(f"/teams/{team.slug}/members/{alice.pk}/remove/", follow=True))

    assert "Only the team's owners and admins add members." in refused
    assert "Only the team's owners and admins remove members." in also
    assert roles(team) == {"alice": "owner", "bob": "member"}


def test_an_admin_removes_members_but_not_the_owner_and_cannot_change_roles(
    client, alice, bob, charlie, team
):
    team.memberships.filter(user=bob).update(role=Membership.Role.ADMIN)
    Membership.objects.create(team=team, user=charlie)
    as_bob = signed_in(client, bob)

    assert "owner" in flash(
        as_bob.post(f"/teams/{team.slug}/members/{alice.pk}/remove/", follow=True)
    )
    assert "Only the team's owners change roles." in flash(
        as_bob.post(
            f"/teams/{team.slug}/members/{charlie.pk}/role/", {"role": "owner"}, follow=True
        )
    )
    assert "charlie left Alice's team." in flash(
        as_bob.post(f"/teams/{team.slug}/members/{charlie.pk}/remove/", follow=True)
    )
    assert roles(team) == {"alice": "owner", "bob": "admin"}


def test_a_member_leaves_and_the_last_owner_cannot(client, alice, bob, team):
    left = signed_in(client, bob).post(f"/teams/{team.slug}/members/{bob.pk}/remove/", follow=True)
    assert left.redirect_chain[-1][0] == "/teams/" and "You left Alice's team." in flash(left)

    refused = flash(
        signed_in(client, alice).post(f"/teams/{team.slug}/members/{alice.pk}/remove/", follow=True)
    )

    assert "Alice's team needs an owner: make someone else owner first." in refused
    assert roles(team) == {"alice": "owner"}


def test_an_owner_hands_over_then_may_leave(client, alice, bob, team):
    as_alice = signed_in(client, alice)
    assert "needs an owner" in flash(
        as_alice.post(
            f"/teams/{team.slug}/members/{alice.pk}/role/", {"role": "member"}, follow=True
        )
    )
    assert roles(team)["alice"] == "owner"  # refused: the only owner

    as_alice.post(f"/teams/{team.slug}/members/{bob.pk}/role/", {"role": "owner"})
    as_alice.post(f"/teams/{team.slug}/members/{alice.pk}/remove/")

    assert roles(team) == {"bob": "owner"}


def test_charlie_sees_nothing_of_alices_team(client, charlie, alice, team):
    as_charlie = signed_in(client, charlie)

    assert as_charlie.get(f"/teams/{team.slug}/").status_code == 404
    assert as_charlie.post(f"/teams/{team.slug}/members/", {"who": "charlie"}).status_code == 404
    assert as_charlie.post(f"/teams/{team.slug}/members/{alice.pk}/remove/").status_code == 404
    assert "Alice's team" not in as_charlie.get("/teams/").content.decode()
    assert roles(team) == {"alice": "owner", "bob": "member"}
