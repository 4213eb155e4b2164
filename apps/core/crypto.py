"""Symmetric encryption of secrets at rest (Fernet; newest key encrypts, every listed key decrypts)."""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    try:
        return MultiFernet([Fernet(key.encode()) for key in keys])
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(
            "MCPHUB_ENCRYPTION_KEYS must be Fernet keys (generate one with "
            "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`)"
        ) from exc


def _current() -> MultiFernet:
    return _fernet(tuple(settings.MCPHUB_ENCRYPTION_KEYS))


def encrypt(plaintext: str) -> str:
    return _current().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken:
        raise ImproperlyConfigured(
            "A stored secret cannot be decrypted with MCPHUB_ENCRYPTION_KEYS: "
            "was the key changed without keeping the old one in the list?"
        ) from None
