"""Encryption of server specs on the Redis wire (they carry decrypted env and header secrets).

The web side encrypts the full spec it sends to a worker (once per worker and config);
the worker decrypts it. Both default to the project's Fernet keys
(`settings.MCPHUB_ENCRYPTION_KEYS`, the keys `apps.core.crypto` uses for secrets at rest; read
here directly, as the pool imports no app) when Django settings are available, and to no
encryption when they are not (the library used on its own, e.g. in benchmarks). Pass a
codec explicitly to `RemotePool(codec=...)` / `PoolWorker(codec=...)` to choose.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
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
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            raise ValueError(
                "cannot decrypt the server spec: the web processes and the pool workers need "
                "the same MCPHUB_ENCRYPTION_KEYS (or codec keys)"
            ) from None


class DjangoCodec:
    """The keys in `settings.MCPHUB_ENCRYPTION_KEYS`, read at each use (no restart to rotate)."""

    def encrypt(self, plaintext: str) -> str:
        return _fernet_codec(_settings_keys()).encrypt(plaintext)

    def decrypt(self, token: str) -> str:
        return _fernet_codec(_settings_keys()).decrypt(token)


def _settings_keys() -> tuple[str, ...]:
    from django.conf import settings

    return tuple(settings.MCPHUB_ENCRYPTION_KEYS)


@cache
def _fernet_codec(keys: tuple[str, ...]) -> FernetCodec:
    return FernetCodec(keys)


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
