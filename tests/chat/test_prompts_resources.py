"""Alice brings her endpoint's prompts (`/`) and resources (`@`) into a conversation, served by the
reference server-everything through the real hub; charlie's socket cannot reach them."""

from __future__ import annotations

import sys

import pytest

from apps.chat.models import Message
from apps.llm.models import Provider
from tests.chat.conftest import Api, chat_socket, db
from tests.live_hub import SERVERS
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def _answer(chat, kind: str) -> dict:
    """The socket's own answer of `kind` (not part of the conversation: `seq` null)."""
    while True:
        event = await chat.next()
        if event["type"] in (kind, "error") and event["seq"] is None:
            assert event["type"] == kind, event
            return event["payload"]


async def test_the_menus_list_prompts_resources_and_templates_with_completions(
    hub, alice_provider, everything_endpoint, alice_hub_token
):
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("items", {"id": 1})
            items = await _answer(chat, "items")
            await chat.send(
                "complete",
                {
                    "id": 2,
                    "ref": {"type": "ref/prompt", "name": "completable-prompt"},
                    "argument": {"name": "department", "value": "S"},
                },
            )
            departments = await _answer(chat, "completion")
            await chat.send(
                "complete",
                {
                    "id": 3,
                    "ref": {"type": "ref/prompt", "name": "completable-prompt"},
                    "argument": {"name": "name", "value": ""},
                    "context": {"department": "Engineering"},
                },
            )
            engineers = await _answer(chat, "completion")
            await chat.send("read", {"id": 4, "uri": "demo://resource/dynamic/text/7"})
            read = await _answer(chat, "resource")
            await chat.send("read", {"id": 5, "uri": "demo://nowhere"})
            unknown = await chat.next()

    prompts = {p["name"]: p for p in items["prompts"]}
    assert prompts["completable-prompt"]["description"].startswith("First argument choice")
    assert [a["name"] for a in prompts["completable-prompt"]["arguments"]] == [
        "department",
        "name",
    ]
    assert any(r["uri"].startswith("demo://resource/static/document/") for r in items["resources"])
    templates = {t["uriTemplate"]: t for t in items["templates"]}
    assert templates["demo://resource/dynamic/text/{resourceId}"]["variables"] == ["resourceId"]
    assert departments["values"] == ["Sales", "Support"] and departments["id"] == 2
    assert engineers["values"] == ["Alice", "Bob", "Charlie"]
    assert read["contents"][0]["text"].startswith("Resource 7: This is a plaintext resource")
    assert (
        unknown["type"] == "error"
        and "Unknown resource 'demo://nowhere'" in unknown["payload"]["message"]
    )


async def test_a_prompt_and_a_resource_go_into_the_conversation(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    llm.script([Reply(text=["Promoted."]), Reply(text=["Read it."])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            prompt = {
                "name": "completable-prompt",
                "arguments": {"department": "Sales", "name": "Eve"},
            }
            await chat.send("message", {"text": "", "prompt": prompt})
            first = await chat.until("user_message")
            await chat.until("end")
            uri = "demo://resource/dynamic/text/3"
            await chat.send("message", {"text": "Summarize this", "resources": [uri]})
            second = await chat.until("user_message")
            await chat.until("end")

    # The prompt's message is the conversation's, as the model and the page see it.
    told = llm.requests[0]["messages"]
    assert told[-1] == {
        "role": "user",
        "content": "Please promote Eve to the head of the Sales team.",
    }
    shown = first["payload"]["context"]["prompt"]
    assert shown[0]["prompt"] == "completable-prompt" and shown[0]["role"] == "user"
    assert shown[0]["content"][0]["text"] == "Please promote Eve to the head of the Sales team."
    # The resource rides along with the user's message: the model reads it, the page names it.
    last = llm.requests[1]["messages"][-1]
    assert last["content"].startswith(
        'Summarize this\n\n<resource uri="demo://resource/dynamic/text/3">'
    )
    assert "Resource 3: This is a plaintext resource" in last["content"]
    assert second["payload"]["text"] == "Summarize this"
    assert second["payload"]["context"]["attachments"][0]["uri"] == uri
    rows = await db(
        lambda: list(
            Message.objects.filter(conversation_id=conversation).values_list("role", flat=True)
        )
    )()
    assert rows == ["user", "assistant", "user", "assistant"]


async def test_bad_requests_are_refused_and_change_nothing(
    hub, llm, alice_provider, everything_endpoint, alice_hub_token
):
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send("message", {"text": "x", "prompt": {"name": "nope"}})
            no_prompt = await _error(chat)
            await chat.send("message", {"text": "x", "resources": ["demo://nowhere"]})
            no_resource = await _error(chat)
            await chat.send("message", {"text": "x", "resources": "demo://x"})
            not_a_list = await _error(chat)
            await chat.send(
                "message",
                {
                    "prompt": {
                        "name": "resource-prompt",
                        "arguments": {"resourceType": "Text", "resourceId": "x"},
                    }
                },
            )
            backend_refused = await _error(chat)

    assert "Unknown prompt 'nope'" in no_prompt
    assert "Unknown resource 'demo://nowhere'" in no_resource
    assert "'resources' must be a list" in not_a_list
    assert "Invalid resourceId" in backend_refused
    assert await db(lambda: Message.objects.filter(conversation_id=conversation).count())() == 0


async def _error(chat) -> str:
    event = await chat.next()
    assert event["type"] == "error" and event["seq"] is None, event
    return event["payload"]["message"]


async def test_charlie_cannot_open_alices_conversation_to_read_her_resources(
    hub, alice_provider, everything_endpoint, alice_hub_token, charlie_hub_token
):
    import websockets

    from tests.chat.conftest import ws_url

    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
    with pytest.raises(websockets.exceptions.InvalidStatus):
        async with websockets.connect(
            ws_url(hub, conversation),
            additional_headers={"Authorization": f"Bearer {charlie_hub_token}"},
        ) as ws:
            await ws.recv()


def test_large_content_is_cut_with_a_note_and_binary_content_named_not_sent():
    from apps.chat.context_items import content_text

    text = content_text(
        [
            {"type": "resource", "resource": {"uri": "demo://a", "text": "x" * 50}},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        ],
        limit=20,
    )
    assert text == "x" * 20 + "\n[… cut: 57 more characters not shown]"
    assert content_text([{"type": "image", "data": "AAAA", "mimeType": "image/png"}], 100) == (
        "[image image/png, 3 bytes]"
    )


PICTURES = {
    "name": "pictures",
    "command": sys.executable,
    "args": [str(SERVERS / "pictures.py")],
}


@pytest.fixture
def claude(alice, llm):
    """Alice's default provider speaks the Anthropic Messages API, which takes pictures."""
    return Provider.objects.create(
        name="claude",
        kind="anthropic",
        base_url=llm.url,
        default_model="claude-sonnet-4-5",
        owner=alice,
        is_default=True,
    )


@pytest.fixture
def pictures_endpoint(alice, transactional_db):
    from apps.catalog.introspection import apply_discovery
    from apps.catalog.models import McpServer
    from apps.connections.default import run_with_pool
    from apps.toolsets.services import enable_tools

    server = McpServer.objects.create(**PICTURES)
    apply_discovery(server=server, discovery=run_with_pool(lambda p: p.discover(server.to_spec())))
    endpoint = alice.endpoints.get()
    enable_tools(endpoint=endpoint, tools=server.tools.all())
    return endpoint


async def test_pictures_reach_a_provider_that_takes_them_as_image_parts(
    hub, llm, claude, pictures_endpoint, alice_hub_token
):
    llm.script([Reply(text=["A red dot."]), Reply(text=["The same dot."])])
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
        async with chat_socket(hub, conversation, alice_hub_token) as chat:
            await chat.send(
                "message", {"prompt": {"name": "describe", "arguments": {"subject": "dot"}}}
            )
            await chat.until("end")
            await chat.send("message", {"text": "And this?", "resources": ["pictures://dot.png"]})
            await chat.until("end")

    first = llm.requests[0]["messages"]
    assert first[-1]["role"] == "user"
    blocks = first[-1]["content"]
    assert blocks[0] == {"type": "text", "text": "Describe this dot:"}
    assert blocks[-1]["type"] == "image" and blocks[-1]["source"]["media_type"] == "image/png"
    # The attached picture rides with the second message; the first one's stays in the history.
    second = llm.requests[1]["messages"]
    images = [
        b
        for m in second
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "image"
    ]
    assert len(images) == 2
    assert second[-1]["content"][0]["text"].startswith(
        'And this?\n\n<resource uri="pictures://dot.png">'
    )


async def test_a_read_only_token_may_look_in_the_menus_but_not_send(
    hub, alice, alice_provider, everything_endpoint, alice_hub_token
):
    from apps.accounts.services import create_access_token

    reader = (await db(create_access_token)(user=alice, name="reader", scope="api_read"))[1]
    async with Api(hub.base_url, alice_hub_token) as api:
        conversation = await api.new_conversation()
    async with chat_socket(hub, conversation, reader) as chat:
        await chat.send("items", {"id": 7})
        items = await _answer(chat, "items")
        await chat.send("message", {"text": "hi", "resources": ["demo://resource/dynamic/text/1"]})
        refused = await chat.next()

    assert items["id"] == 7 and items["prompts"]
    assert refused["type"] == "error" and refused["payload"]["code"] == "forbidden"
    assert await db(lambda: Message.objects.filter(conversation_id=conversation).count())() == 0
