"""Validated hub access tokens, remembered for a few seconds per process; any change is seen at once.

Every REST request and every chat or run socket that brings a token looked it up: a query joining
its user, ~1 ms of the web process's CPU each (in-process profile of POST /api/runs/: 17 % of the
request), two per run started and followed. A validated token is remembered here for
`CACHE_SECONDS`, stamped with the accounts epoch read before it was validated. Saving or deleting
any token or user bumps the epoch after commit (Redis, or the database when embedded) and empties
this process's cache at once, so a revoked token, a changed scope or a deactivated user is refused
from the next request on, in every process: the scheme apps/oauth/revocation.py uses for OAuth
tokens. A hit costs one Redis GET; expiry is checked on every hit. If the epoch cannot be read
(Redis down), tokens are validated in the database as before, and nothing is remembered.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
import time

from django.db import transaction

from apps.core import hotstate

logger = logging.getLogger(__name__)

EPOCH_KEY = "mcphub:accounts:epoch"
CACHE_SECONDS = 5.0
_MAX_ENTRIES = 10_000

_lock = threading.Lock()
_entries: dict[str, tuple[float, int, object]] = {}  # sha256(raw) → (deadline, epoch, AccessToken)


def _key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def epoch() -> int | None:
    """The accounts epoch now; None when it cannot be read (then nothing is cached)."""
    try:
        return hotstate.counter(EPOCH_KEY)
    except hotstate.OUTAGE_ERRORS:
        return None


def get(raw: str, stamp: int | None):
    """The token validated for `raw` under epoch `stamp`, or None. Shared by every request that
    brings it: hand each a `copy_of` it."""
    if stamp is None:
        return None
    entry = _entries.get(_key(raw))
    if entry is None or entry[0] < time.monotonic() or entry[1] != stamp:
        return None
    return entry[2]


def copy_of(token):
    """A request's own copy of a remembered token and its user (Django caches permissions on the
    user object, and a request may change what it was handed)."""
    mine = copy.copy(token)
    mine.user = copy.copy(token.user)
    return mine


def put(raw: str, stamp: int | None, token: object) -> None:
    if stamp is None:
        return
    with _lock:
        if len(_entries) >= _MAX_ENTRIES:
            _entries.clear()  # bounded: a flood of distinct tokens cannot grow memory
        _entries[_key(raw)] = (time.monotonic() + CACHE_SECONDS, stamp, token)


def _changed(**signal: object) -> None:
    """A token or a user was saved or deleted: forget every token here now, and in every process
    once it commits."""
    with _lock:
        _entries.clear()
    transaction.on_commit(_bump)


def _bump() -> None:
    try:
        hotstate.incr(EPOCH_KEY)
    except hotstate.OUTAGE_ERRORS:
        # The change is committed; other processes stop using what they remember within
        # CACHE_SECONDS (and remember nothing while they cannot read the epoch either).
        logger.warning(
            "token cache: could not bump the accounts epoch (Redis down?)", exc_info=True
        )


def connect() -> None:
    from django.db.models.signals import post_delete, post_save

    from apps.accounts.models import AccessToken, User

    for model in (AccessToken, User):
        post_save.connect(
            _changed, sender=model, dispatch_uid=f"token-cache-{model.__name__}-saved"
        )
        post_delete.connect(
            _changed, sender=model, dispatch_uid=f"token-cache-{model.__name__}-deleted"
        )
