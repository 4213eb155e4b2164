"""Which providers a user may use, and which one a new chat picks."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser

from apps.llm import services
from apps.llm.selectors import default_provider_for, provider_for, providers_for


def _provider(name: str, *, owner=None, is_default: bool = False):
    return services.create_provider(
        actor=None,
        name=name,
        kind="openai",
        base_url="http://127.0.0.1:1234/v1",
        owner=owner,
        shared=owner is None,
        is_default=is_default,
    )


def test_each_user_sees_the_shared_providers_and_only_their_own(alice, bob, charlie):
    shared = _provider("shared")
    alices = _provider("alices", owner=alice)
    bobs = _provider("bobs", owner=bob)

    assert set(providers_for(alice)) == {shared, alices}
    assert set(providers_for(charlie)) == {shared}
    assert provider_for(bob, bobs.pk) == bobs
    assert not providers_for(AnonymousUser()).exists()
    assert not providers_for(charlie).filter(pk__in=[alices.pk, bobs.pk]).exists()


def test_the_default_is_your_own_then_the_shared_one_then_your_first(alice, charlie):
    assert default_provider_for(charlie) is None

    first = _provider("a-first-shared")
    assert default_provider_for(charlie) == first

    site_default = _provider("site", is_default=True)
    assert default_provider_for(charlie) == site_default

    alices = _provider("zz-alices", owner=alice, is_default=True)
    assert default_provider_for(alice) == alices
    assert default_provider_for(charlie) == site_default


def test_the_default_is_found_in_one_query_whichever_kind_it_is(alice, django_assert_num_queries):
    _provider("a-shared")
    _provider("site", is_default=True)
    _provider("b-own", owner=alice)
    with django_assert_num_queries(1):
        assert default_provider_for(alice).name == "site"  # no default of her own: the shared one

    _provider("c-own-default", owner=alice, is_default=True)
    with django_assert_num_queries(1):
        assert default_provider_for(alice).name == "c-own-default"


def test_a_users_own_provider_comes_before_shared_ones_when_no_default_is_set(alice):
    _provider("a-shared")
    own = _provider("z-own", owner=alice)

    assert default_provider_for(alice) == own
