"""The shape of the hub's OAuth tokens: recognisable, so anything else is refused without a lookup."""

from __future__ import annotations

import re
import secrets
from typing import Any

ACCESS_PREFIX = "mcphub_oat_"
REFRESH_PREFIX = "mcphub_ort_"
_ACCESS_RE = re.compile(r"^mcphub_oat_[A-Za-z0-9_-]{43}$")


def generate_access_token(request: Any = None) -> str:
    return ACCESS_PREFIX + secrets.token_urlsafe(32)


def generate_refresh_token(request: Any = None) -> str:
    return REFRESH_PREFIX + secrets.token_urlsafe(32)


def looks_like_access_token(raw: str) -> bool:
    return bool(_ACCESS_RE.match(raw))
