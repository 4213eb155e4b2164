"""Provider failures as the user reads them in a chat turn and a run, through the real hub: a reply
cut short, a spent Gemini quota, Ollama entered without /v1."""

from __future__ import annotations

import pytest

from apps.llm.models import Provider
from tests.chat.conftest import Api, chat_socket, db
from tests.chat.runs.conftest import start_run, wait_run
from tests.llm_server import Reply, ScriptedLLM

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

TOOLS = Reply(tool_calls=[("c1", "echo", {"text": "hi"}), ("c2", "add", {"a": 2, "b": 3})])
# The role chunk, then two text chunks, then the connection closes short of its Content-Length.
CUT = Reply(text=["Echo said ", "héllo ", "and 2+3=5"], close_after=3)
CUT_SAID = "The reply was cut off after 16 characters: the connection to the provider"


async def _turn(hub, token: str, text: str) -> tuple[dict, list[dict]]:
    async with Api(hub.base_url, token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, token) as chat:
            await chat.send("message", {"text": text})
            end = await chat.until("end")
    return end, [e["payload"]["message"] for e in chat.of("error")]


async def test_a_turn_cut_short_says_after_how_much(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([TOOLS, CUT])

    end, errors = await _turn(hub, alice_hub_token, "Use the tools")

    assert end["payload"]["status"] == "failed"
    assert len(errors) == 1 and CUT_SAID in errors[0]
    assert "transfer length" not in errors[0] and "Cannot reach" not in errors[0]


async def test_a_run_cut_short_says_after_how_much(
    hub, llm, alice_provider, alice_endpoint, alice_hub_token
):
    llm.script([TOOLS, CUT])
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Use echo and add", servers=["echo"])
        done = await wait_run(api, run["id"])

    assert done["status"] == "failed" and CUT_SAID in done["error"]
    assert [c["name"] for c in done["steps"][0]["tool_calls"]] == ["echo", "add"]


@pytest.fixture
def gemini(alice):
    with ScriptedLLM(flavour="gemini") as server:
        Provider.objects.create(
            name="gemini",
            kind="openai",
            base_url=server.url,
            default_model="scripted-model",
            owner=alice,
            is_default=True,
        )
        yield server


async def test_a_spent_gemini_quota_reads_as_such_in_a_turn_and_a_run(
    hub, gemini, alice_endpoint, alice_hub_token
):
    gemini.script(
        [
            TOOLS,
            Reply(error=429, error_code="daily_quota"),
            TOOLS,
            Reply(error=429, error_code="daily_quota"),
        ]
    )

    end, errors = await _turn(hub, alice_hub_token, "Use the tools")
    async with Api(hub.base_url, alice_hub_token) as api:
        run = await start_run(api, task="Use echo and add", servers=["echo"])
        done = await wait_run(api, run["id"])

    for said in (errors[0], done["error"]):
        assert "out of quota" in said and "You exceeded your current quota" in said
    assert end["payload"]["status"] == "failed" and done["status"] == "failed"
    assert len(gemini.requests) == 4  # a spent quota is not retried


async def test_ollama_without_v1_is_told_to_add_it_at_save_and_at_list_models(
    hub, alice, alice_hub_token
):
    with ScriptedLLM(flavour="ollama") as ollama:
        # Saved before this check existed, or on another port: listing its models says what to change.
        saved = await db(
            lambda: Provider.objects.create(
                name="old", kind="openai", base_url=ollama.base, owner=alice
            )
        )()
        async with Api(hub.base_url, alice_hub_token) as api:
            created = await api.client.post(
                "/llm/providers/",
                json={"name": "ollama", "kind": "openai", "base_url": "http://127.0.0.1:11434"},
            )
            listed = (await api.client.get(f"/llm/providers/{saved.pk}/models/")).json()

    assert (
        created.status_code == 400 and "http://127.0.0.1:11434/v1" in created.json()["base_url"][0]
    )
    assert (
        listed["ok"] is False
        and "Ollama's own API" in listed["error"]
        and f"{ollama.base}/v1" in listed["error"]
    )
    assert not await db(Provider.objects.filter(name="ollama").exists)()


async def test_a_runs_page_hears_that_the_model_is_loading(
    hub, alice, alice_endpoint, alice_hub_token
):
    import asyncio
    import json

    import websockets

    with ScriptedLLM(flavour="llamacpp") as llamacpp:
        await db(
            lambda: Provider.objects.create(
                name="llama",
                kind="openai",
                base_url=llamacpp.url,
                default_model="scripted-model",
                owner=alice,
                is_default=True,
            )
        )()
        # Four seconds of "Loading model" (Retry-After: 1), time for the page to connect meanwhile.
        llamacpp.script([Reply(loading=True, retry_after=1)] * 4 + [TOOLS, Reply(text=["done"])])
        async with Api(hub.base_url, alice_hub_token) as api:
            run = await start_run(api, task="Use echo and add", servers=["echo"])
            url = hub.url(f"/ws/runs/{run['id']}/").replace("http://", "ws://")
            async with websockets.connect(
                url, additional_headers={"Authorization": f"Bearer {alice_hub_token}"}
            ) as ws:
                await ws.send(json.dumps({"type": "resume", "payload": {"after": 0}}))
                events: list[dict] = []
                while not events or events[-1]["type"] != "end":
                    events.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))

    notes = [e["payload"]["message"] for e in events if e["type"] == "provider_status"]
    assert notes[:-1] and all(note.startswith("The model is loading") for note in notes[:-1])
    assert notes[-1] == ""  # answering now: the page clears the note
    assert events[-1]["payload"]["status"] == "succeeded"
