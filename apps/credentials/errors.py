"""The error a call gets when its user has not filled a server's required variables."""

from __future__ import annotations

from apps.connections.errors import PoolError


class CredentialsMissing(PoolError):
    """A PoolError, so every call path already turns it into a clear tool error (`isError`)."""

    kind = "credentials_missing"

    def __init__(
        self,
        server: str,
        message: str,
        *,
        missing: list[str] | None = None,
        fill_at: str = "",
        api: str = "",
    ) -> None:
        super().__init__(server, message)
        self.missing = missing or []
        self.fill_at = fill_at
        self.api = api


class CredentialsInvalid(ValueError):
    """Values that cannot be saved; `errors` maps each variable to what is wrong with it."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors
