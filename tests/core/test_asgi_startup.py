"""A server that sends no ASGI lifespan (Daphne) still starts what the lifespan starts, once."""

import json
import subprocess
import sys
from pathlib import Path

from tests.live_hub import hub_env

ROOT = Path(__file__).resolve().parents[2]

# Its own process: what starts with serving is once per process (the schedule, the leases' keeper,
# the frozen heap), and must not start in the test runner's.
SCRIPT = """
import asyncio, gc, json, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
from django.conf import settings
from mcphub import asgi, beat
from apps.chat import healing


async def request(path):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
    }
    await asgi.application(scope, receive, send)
    return sent[0]["status"]


async def main():
    gc.unfreeze()
    before = {"started": asgi._started, "frozen": gc.get_freeze_count()}
    first = await request("/mcp/nobody")
    after_first = {"frozen": gc.get_freeze_count(), "beat": beat._started,
                   "healing": len(healing._started)}
    gc.unfreeze()
    second = await request("/mcp/nobody")
    print(json.dumps({
        "before": before, "first": first, "after_first": after_first, "second": second,
        "frozen_after_second": gc.get_freeze_count(), "embedded": not settings.REDIS_URL,
    }))


asyncio.run(main())
"""


def test_the_first_request_starts_what_the_lifespan_would_and_only_once(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=hub_env(MCPHUB_DATA_DIR=str(tmp_path), MCPHUB_EMBEDDED_BEAT="true"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])

    assert seen["before"] == {"started": False, "frozen": 0}
    assert seen["first"] == 401  # answered as ever: no token
    assert seen["after_first"]["frozen"] > 10_000  # the heap Django and the apps built, settled
    # Embedded, the schedule and the leases' keeper run on the serving loop; with Redis, the
    # Celery beat and workers do that.
    assert seen["after_first"]["beat"] is seen["embedded"]
    assert seen["after_first"]["healing"] == (1 if seen["embedded"] else 0)
    assert seen["second"] == 401
    assert seen["frozen_after_second"] == 0  # started once: not settled again
