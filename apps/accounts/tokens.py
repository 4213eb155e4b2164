"""Access-token format and hashing: `mcphub_<prefix>_<secret>`, stored as prefix + HMAC-SHA256."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from django.conf import settings

TOKEN_RE = re.compile(r"^mcphub_(?P<prefix>[a-z0-9]{10})_(?P<secret>[A-Za-z0-9_-]{32,64})$")
_PREFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True)
class RawToken:
    prefix: str
    value: str


def generate() -> RawToken:
    prefix = "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(10))
    return RawToken(prefix=prefix, value=f"mcphub_{prefix}_{secrets.token_urlsafe(32)}")


def digest(raw: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), raw.encode(), hashlib.sha256).hexdigest()


def parse_prefix(raw: str) -> str | None:
    """The lookup prefix of a well-formed token, or None for anything else."""
    match = TOKEN_RE.match(raw or "")
    return match["prefix"] if match else None


def matches(raw: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(raw), stored_digest)
