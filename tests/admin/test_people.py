"""Users, teams and presets in the admin."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.accounts.models import Membership, User
from apps.toolsets.models import Preset
from apps.toolsets.services import save_preset_version
from tests.admin.browser import submit


@pytest.fixture
def logged_in(client, admin_user):
    client.force_login(admin_user)
    return client


def test_adding_a_user_gives_them_a_default_endpoint(logged_in):
    response = logged_in.post(
        reverse("admin:accounts_user_add"),
        {
            "username": "dora",
            "usable_password": "true",
            "password1": "a-long-pass-phrase-42",
            "password2": "a-long-pass-phrase-42",
        },
    )

    assert response.status_code == 302
    dora = User.objects.get(username="dora")
    assert dora.check_password("a-long-pass-phrase-42")
    assert dora.endpoints.filter(is_default=True).exists()


def test_user_page_shows_their_teams(logged_in, bob, team):
    html = logged_in.get(reverse("admin:accounts_user_change", args=[bob.pk])).content.decode()

    assert "Alice&#x27;s team" in html


def test_a_member_is_added_to_a_team_through_the_inline(logged_in, team, charlie):
    url = reverse("admin:accounts_team_change", args=[team.pk])

    response = submit(
        logged_in,
        url,
        {
            "memberships-TOTAL_FORMS": "3",
            "memberships-2-user": str(charlie.pk),
            "memberships-2-role": "admin",
            "memberships-2-team": str(team.pk),
        },
    )

    assert response.status_code == 302
    assert Membership.objects.get(team=team, user=charlie).role == Membership.Role.ADMIN


def test_preset_page_lists_versions_read_only(logged_in, alice, team):
    preset = Preset.objects.create(name="research", owner=alice, team=team, visibility="team")
    save_preset_version(
        preset=preset, tool_keys=["time.now", "web.fetch"], user=alice, note="first"
    )
    save_preset_version(preset=preset, tool_keys=["time.now"], user=alice)

    response = logged_in.get(reverse("admin:toolsets_preset_change", args=[preset.pk]))

    versions = response.context["inline_admin_formsets"][0]
    assert [form.original.number for form in versions] == [2, 1]
    assert not versions.has_add_permission and not versions.has_change_permission
    assert "first" in response.content.decode()


def test_a_team_preset_without_a_team_is_refused(logged_in, alice):
    response = logged_in.post(
        reverse("admin:toolsets_preset_add"),
        {
            "name": "loose",
            "owner": alice.pk,
            "visibility": "team",
            "versions-TOTAL_FORMS": "0",
            "versions-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 200
    assert not Preset.objects.filter(name="loose").exists()
