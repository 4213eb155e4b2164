"""Revocation takes effect at once in every web process, while a valid token costs no query.

Web processes cache a validated OAuth token for a few seconds, stamped with the revocation
epoch they read before validating it. Deleting or revoking any OAuth token bumps the epoch (Redis,
or the database when embedded) after commit; a cached token whose stamp is older is validated
again. Each request reads the epoch: one Redis GET (or a SQLite primary-key read), never a query.
"""

from __future__ import annotations

from django.db import transaction

from apps.core import hotstate

EPOCH_KEY = "mcphub:oauth:epoch"


def bump_after_commit() -> None:
    transaction.on_commit(lambda: hotstate.incr(EPOCH_KEY))


async def current_epoch() -> int:
    client = hotstate.async_redis()
    value = (
        await client.get(EPOCH_KEY)
        if client is not None
        else await hotstate.read_counter(EPOCH_KEY)
    )
    return int(value or 0)
