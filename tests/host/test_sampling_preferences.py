"""A backend's numeric model preferences (cost, speed, intelligence) pick among Alice's models by
the documented family table when its hints pick none; unknown models fall back to her default."""

from __future__ import annotations

import json

import pytest

from apps.llm import model_traits
from apps.llm.models import Provider
from tests.chat.conftest import Api, db
from tests.live_hub import mcp_client
from tests.llm_server import Reply


def test_the_table_ranks_by_the_weighted_priorities():
    models = [
        ("default", "my-local-model"),
        ("opus", "claude-opus-4-1"),
        ("haiku", "claude-haiku-4-5"),
    ]
    assert model_traits.best(models, 0, 0, 1) == "opus"
    assert model_traits.best(models, 0, 1, 0) == "haiku"
    assert model_traits.best(models, 1, 0, 0.2) == "haiku"
    assert model_traits.best(models, 0, 0, 0) is None  # no priorities: no ranking
    assert model_traits.best([("x", "my-local-model")], 1, 1, 1) is None  # unknown: not ranked
    assert model_traits.best(models, 0, 5, -3) == "haiku"  # out of 0-1: clamped
    # Family order: the longer name first.
    assert model_traits.traits("gpt-4o-mini-2024").cost > model_traits.traits("gpt-4o").cost


def _answer(result) -> dict:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(90)
async def test_priorities_pick_alices_model_when_hints_do_not(
    hub, llm, alice, alice_provider, asker_endpoint, alice_hub_token
):
    for name, model in (("opus", "claude-opus-4-1"), ("haiku", "claude-haiku-4-5")):
        await db(Provider.objects.create)(
            name=name, kind="openai", base_url=llm.url, default_model=model, owner=alice
        )
    llm.script([Reply(text=[str(n)]) for n in range(5)])
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        calls = [
            {"intelligence": 1.0},
            {"speed": 0.9, "cost": 0.5},
            {"hint": "haiku", "intelligence": 1.0},  # a hint that matches comes first
            {"hint": "gpt-9", "intelligence": 0.8, "speed": 0.1},  # no match: priorities decide
            {},  # no preferences: her default
        ]
        models = [
            _answer(await client.call_tool("write", {"question": "q", **c}))["model"] for c in calls
        ]

    expected = ["claude-opus-4-1", "claude-haiku-4-5", "claude-haiku-4-5", "claude-opus-4-1"]
    assert models == [*expected, "scripted-model"]
    assert [r["model"] for r in llm.requests] == models


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(90)
async def test_priorities_over_models_the_table_does_not_know_fall_back_to_the_default(
    hub, llm, alice, alice_provider, asker_endpoint, alice_hub_token
):
    await db(Provider.objects.create)(
        name="local", kind="openai", base_url=llm.url, default_model="my-finetune", owner=alice
    )
    llm.script([Reply(text=["a"])])
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        answer = _answer(await client.call_tool("write", {"question": "q", "speed": 1.0}))

    assert answer["model"] == "scripted-model"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(90)
async def test_alices_own_traits_for_her_models_come_before_the_table(
    hub, llm, alice, alice_provider, asker_endpoint, alice_hub_token
):
    # Neither model is in the family table: without her traits, priorities pick nothing.
    large = await db(Provider.objects.create)(
        name="large", kind="openai", base_url=llm.url, default_model="scripted-large", owner=alice
    )
    bad = [
        {"scripted-large": {"cost": 0.1, "speed": 0.2}},
        {"scripted-large": {"cost": 0.1, "speed": 0.2, "intelligence": 1.5}},
        {"scripted-large": {"cost": 0.1, "speed": 0.2, "intelligence": True}},
        ["scripted-large"],
    ]
    mine = {"scripted-large": {"cost": 0.1, "speed": 0.2, "intelligence": 0.95}}
    fast = {"scripted-model": {"cost": 0.9, "speed": 0.9, "intelligence": 0.3}}
    llm.script([Reply(text=[str(n)]) for n in range(3)])
    async with Api(hub.base_url, alice_hub_token) as api:
        refused = [
            await api.client.patch(f"/llm/providers/{large.pk}/", json={"model_traits": b})
            for b in bad
        ]
        for provider, traits in ((large, mine), (alice_provider, fast)):
            saved = await api.client.patch(
                f"/llm/providers/{provider.pk}/", json={"model_traits": traits}
            )
            assert saved.status_code == 200, saved.text
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        calls = [{"intelligence": 1.0}, {"speed": 1.0, "cost": 0.5}, {"hint": "large"}]
        models = [
            _answer(await client.call_tool("write", {"question": "q", **c}))["model"] for c in calls
        ]

    assert [r.status_code for r in refused] == [400] * 4
    assert "exactly cost, speed and intelligence" in refused[0].text
    assert "from 0 to 1" in refused[1].text and "from 0 to 1" in refused[2].text
    assert models == ["scripted-large", "scripted-model", "scripted-large"]
    await db(large.refresh_from_db)()
    assert large.model_traits == mine  # the refused ones changed nothing
