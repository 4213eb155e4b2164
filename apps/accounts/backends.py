"""Sign-in lockout: django-axes' check, for sign-ins that arrive as a request."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class SignInLockoutBackend(AxesStandaloneBackend):
    """Refuses a sign-in while its account or address is locked out (the login page, the admin).

    Sign-ins from code carry no request (the test client's `login`, scripts): there is no address
    to count, and no one guessing from outside, so they pass to the next backend unchecked.
    """

    def authenticate(
        self, request, username: str | None = None, password: str | None = None, **kwargs
    ):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)
