"""Encryption of server specs on the Redis wire (they carry decrypted env and header secrets).

The web side encrypts the full spec it sends to a worker (once per worker and config);
the worker decrypts it. Both default to the project's Fernet keys (`apps.core.crypto`,
`settings.MCPHUB_ENCRYPTION_KEYS`) when Django settings are available, and to no
encryption when they are not (the library used on its own, e.g. in benchmarks). Pass a
codec explicitly to `RemotePool(codec=...)` / `PoolWorker(codec=...)` to choose.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol


class SpecCodec(Protocol):
    def encrypt(self, plaintext: str) -> str: ...

    def decrypt(self, token: str) -> str: ...


class FernetCodec:
    """Fernet with key rotation: the first key encrypts, every key decrypts."""

    def __init__(self, keys: Sequence[str]) -> None:
        from cryptography.fernet import Fernet, MultiFernet

        if not keys:
            raise ValueError("FernetCodec needs at least one key")
        self._fernet = MultiFernet([Fernet(k.encode() if isinstance(k, str) else k) for k in keys])

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str) -> str:
        return self._fernet.decrypt(token.encode()).decode()


class DjangoCodec:
    """`apps.core.crypto`: the keys in `settings.MCPHUB_ENCRYPTION_KEYS`, read at each use."""

    def encrypt(self, plaintext: str) -> str:
        from apps.core.crypto import encrypt

        return encrypt(plaintext)

    def decrypt(self, token: str) -> str:
        from apps.core.crypto import decrypt

        return decrypt(token)


def default_codec() -> SpecCodec | None:
    """The project's keys when Django settings are configured (or configurable), else None."""
    try:
        from django.conf import settings
    except ImportError:
        return None
    if not settings.configured and not os.environ.get("DJANGO_SETTINGS_MODULE"):
        return None
    try:
        keys = getattr(settings, "MCPHUB_ENCRYPTION_KEYS", None)
    except Exception:  # boundary: unimportable settings mean "no Django here", not a crash
        return None
    return DjangoCodec() if keys else None
