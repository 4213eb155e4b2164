"""The hub's ASGI app as the tests' hub processes serve it (tests/live_hub.py `start_web`).

A hub process outlives each test's database: a transactional test's teardown empties every table,
and the content types Django then creates again get new ids. ContentType caches ids for the
process's lifetime, so an audit entry the hub writes after that would point at a row that is gone.
Production never rebuilds the table under a running process; only the tests' hub forgets the ids
it cached, at the start of each request (one cheap lookup per audited write).
"""

from mcphub.asgi import application as hub_application


async def application(scope, receive, send):
    from django.contrib.contenttypes.models import ContentType  # once mcphub.asgi set Django up

    ContentType.objects.clear_cache()
    await hub_application(scope, receive, send)
