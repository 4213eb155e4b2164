"""The one user-facing error base: a refusal whose message the user can act on, and a short code
API clients and sockets can branch on. Apps subclass it to say whose refusal it is."""

from __future__ import annotations


class UserError(Exception):
    """A request refused with a message for the user; nothing was changed."""

    def __init__(self, message: str, *, code: str = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
