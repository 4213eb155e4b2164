"""Sign-in backends: django-axes' lockout check, and passwords (closed in SSO-only mode)."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.contrib.auth.backends import ModelBackend

from apps.accounts.models import User
from apps.accounts.sso.config import may_use_password


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


class PasswordBackend(ModelBackend):
    """Django's username-and-password check, closed in SSO-only mode (MCPHUB_SSO_ONLY) to every
    account but the named break-glass ones. Sessions already open keep working."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not may_use_password(username or kwargs.get(User.USERNAME_FIELD)):
            return None
        return super().authenticate(request, username, password, **kwargs)
