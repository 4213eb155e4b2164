"""Django under the ASGI server (mcphub/django_handler.py): a fixed pool of request threads, one hop each.

Through the shared live hub: more requests at once than the pool has threads all answer (they wait
their turn, each thread hands its database connection back after its request). Responses Django
streams (static files, through WhiteNoise) are what every browser test loads its pages' scripts with."""

import asyncio

import aiohttp
import pytest
from django.conf import settings

from apps.accounts.services import create_access_token

pytestmark = pytest.mark.django_db(transaction=True)


def test_more_requests_at_once_than_threads_all_answer(hub, alice):
    _, token = create_access_token(user=alice, name="script", scope="api_read")
    logged = {path: len(path.read_text()) for path in hub.log_dir.glob("*.log")}
    at_once = (
        settings.MCPHUB_WEB_THREADS * 3 + 5
    )  # also more than the database pool's 40 connections

    async def burst() -> list[tuple[str, int, str]]:
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:

            async def one(path: str) -> tuple[str, int, str]:
                async with http.get(
                    hub.url(path), timeout=aiohttp.ClientTimeout(total=60)
                ) as response:
                    return path, response.status, await response.text()

            answers = []
            for _ in range(2):  # twice: connections went back to the pool after the first burst
                answers += await asyncio.gather(
                    *(one(p) for p in ("/api/endpoints/", "/api/runs/") * (at_once // 2))
                )
            return answers

    answers = asyncio.run(burst())
    assert len(answers) == 2 * 2 * (at_once // 2)
    assert {status for _, status, _ in answers} == {200}
    slug = alice.endpoints.get().slug
    assert all(
        slug in body for path, _, body in answers if path == "/api/endpoints/"
    )  # each its own answer
    # The session hub's logs hold every test's: read what was written since this one began.
    assert not any(
        "Traceback" in path.read_text()[logged.get(path, 0) :] for path in hub.log_dir.glob("*.log")
    )
