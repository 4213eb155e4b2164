"""Images and audio in a backend's sampling request go to Alice's model in its provider's wire
format; what her provider's API cannot take is refused to the backend in words, never dropped."""

from __future__ import annotations

import json

import pytest
from mcp import MCPError

from apps.llm.models import Provider
from tests.chat.conftest import db
from tests.host.host_server import PIXEL, SOUND
from tests.live_hub import mcp_client
from tests.llm_server import Reply

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


async def _provider(alice, llm, kind: str) -> None:
    await db(Provider.objects.create)(
        name=kind,
        kind=kind,
        base_url=llm.url,
        default_model="scripted-model",
        owner=alice,
        is_default=True,
    )


async def test_openai_gets_the_picture_as_a_data_url_and_the_sound_as_input_audio(
    hub, llm, alice, asker_endpoint, alice_hub_token
):
    await _provider(alice, llm, "openai")
    llm.script([Reply(text=["a red dot, and a beep"])])
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        result = await client.call_tool("look", {"audio_type": "audio/wav"})

    assert json.loads(result.content[0].text)["text"] == "a red dot, and a beep"
    [sampled] = llm.requests
    assert sampled["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in the picture?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
                {"type": "input_audio", "input_audio": {"data": SOUND, "format": "wav"}},
            ],
        }
    ]


async def test_anthropic_gets_the_picture_as_a_base64_image_block(
    hub, llm, alice, asker_endpoint, alice_hub_token
):
    await _provider(alice, llm, "anthropic")
    llm.script([Reply(text=["a red dot"])])
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        result = await client.call_tool("look", {})

    assert json.loads(result.content[0].text)["text"] == "a red dot"
    [sampled] = llm.requests
    assert sampled["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in the picture?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
                },
            ],
        }
    ]


@pytest.mark.parametrize(
    ("kind", "audio_type", "said"),
    [
        ("anthropic", "audio/wav", "takes no audio"),
        ("openai", "audio/ogg", "takes WAV or MP3 audio, not audio/ogg"),
    ],
)
async def test_audio_the_provider_cannot_take_is_refused_to_the_backend(
    hub, llm, alice, asker_endpoint, alice_hub_token, kind, audio_type, said
):
    await _provider(alice, llm, kind)
    async with mcp_client(hub.url(asker_endpoint.path), alice_hub_token) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("look", {"audio_type": audio_type})

    assert said in refused.value.message
    assert llm.requests == []
