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


# Raw tokens must never reach a log: anywhere a URL or header may be written, pass it through
# `redact`, which keeps only the (non-secret) lookup prefix, enough to tell tokens apart.
_RAW_TOKEN_RE = re.compile(r"mcphub_(?P<prefix>[a-z0-9]{10})_[A-Za-z0-9_-]{32,64}")
_URL_TOKEN_RE = re.compile(r"/mcp/t/(?P<token>[^/\s?#\"']+)")
# The OAuth access and refresh tokens of apps/oauth (`mcphub_oat_…`, `mcphub_ort_…`): no prefix to keep.
_OAUTH_TOKEN_RE = re.compile(r"mcphub_(?P<kind>o[ar]t)_[A-Za-z0-9_-]{20,}")
REDACTED = "…"


def redact(text: str) -> str:
    """`text` with every raw token, and every token-in-URL segment (well-formed or not), redacted."""
    if "/mcp/t/" not in text and "mcphub_" not in text:
        return text
    text = _URL_TOKEN_RE.sub(lambda m: f"/mcp/t/{_short(m['token'])}", text)
    text = _OAUTH_TOKEN_RE.sub(lambda m: f"mcphub_{m['kind']}_{REDACTED}", text)
    return _RAW_TOKEN_RE.sub(lambda m: f"mcphub_{m['prefix']}_{REDACTED}", text)


def _short(raw: str) -> str:
    prefix = parse_prefix(raw)
    return f"mcphub_{prefix}_{REDACTED}" if prefix else REDACTED
