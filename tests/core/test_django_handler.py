"""Django under Daphne (mcphub/django_handler.py): a fixed pool of request threads, one hop each.

Through the shared live hub: more requests at once than the pool has threads all answer (they wait
their turn, each thread hands its database connection back after its request), and a response
Django streams (a static file, through WhiteNoise) arrives whole."""

import asyncio
from pathlib import Path

import aiohttp
import pytest
from django.conf import settings

from apps.accounts.services import create_access_token

pytestmark = pytest.mark.django_db(transaction=True)
STATIC = Path(__file__).resolve().parents[2] / "static"


def test_more_requests_at_once_than_threads_all_answer(hub, alice):
    _, token = create_access_token(user=alice, name="script", scope="api_read")
    at_once = settings.MCPHUB_WEB_THREADS * 3 + 5  # also more than the database pool's 40 connections

    async def burst() -> list[tuple[str, int, str]]:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:

            async def one(path: str) -> tuple[str, int, str]:
                async with http.get(hub.url(path), timeout=aiohttp.ClientTimeout(total=60)) as response:
                    return path, response.status, await response.text()

            answers = []
            for _ in range(2):  # twice: connections went back to the pool after the first burst
                answers += await asyncio.gather(*(one(p) for p in ("/api/endpoints/", "/api/runs/") * (at_once // 2)))
            return answers

    answers = asyncio.run(burst())
    assert len(answers) == 2 * 2 * (at_once // 2)
    assert {status for _, status, _ in answers} == {200}
    slug = alice.endpoints.get().slug
    assert all(slug in body for path, _, body in answers if path == "/api/endpoints/")  # each its own answer
    assert "Traceback" not in hub.log()


def test_a_streamed_response_arrives_whole(hub):
    async def fetch() -> tuple[int, bytes]:
        async with aiohttp.ClientSession() as http, http.get(hub.url("/static/js/render.js")) as response:
            return response.status, await response.read()

    status, body = asyncio.run(fetch())
    assert status == 200
    assert body == (STATIC / "js" / "render.js").read_bytes()
