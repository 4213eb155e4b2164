"""An endpoint's URL names the endpoint, never its owner; URLs already handed out keep working."""

from __future__ import annotations

import re

from apps.toolsets.services import create_endpoint


def test_alices_urls_do_not_carry_her_username(alice):
    research = create_endpoint(owner=alice, name="Research")

    assert re.fullmatch(r"research-[0-9a-f]{6}", research.slug)
    assert re.fullmatch(r"default-[0-9a-f]{6}", alice.endpoints.get(is_default=True).slug)
    assert all("alice" not in endpoint.path for endpoint in alice.endpoints.all())


def test_two_endpoints_of_the_same_name_get_different_urls(alice, bob):
    assert (
        create_endpoint(owner=alice, name="Work").slug
        != create_endpoint(owner=bob, name="Work").slug
    )


def test_a_name_with_nothing_sluggable_still_gets_a_valid_url(alice):
    endpoint = create_endpoint(owner=alice, name="🙂 !!")

    assert re.fullmatch(r"endpoint-[0-9a-f]{6}", endpoint.slug)
    endpoint.full_clean()
