"""Create, list and revoke access tokens from scripts: `manage.py mcp_token create --user alice`."""

from __future__ import annotations

import json
import os

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.models import AccessToken, TokenScope, User
from apps.accounts.services import create_access_token, revoke_access_token
from apps.toolsets.models import Endpoint
from apps.toolsets.services import ensure_default_endpoint


class Command(BaseCommand):
    help = "Manage access tokens. The raw token is printed once, at creation, and never again."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Create a token and print it once.")
        create.add_argument("--user", required=True)
        create.add_argument(
            "--endpoint", help="An MCP token for this endpoint slug only (may sit in the URL)."
        )
        create.add_argument(
            "--scope",
            choices=TokenScope.values,
            help="mcp (MCP endpoints only; the default with --endpoint), api_read, api_write, or full "
            "(API read-write and MCP; the default otherwise).",
        )
        create.add_argument("--name", default="", help="A label, e.g. the client that will use it.")
        create.add_argument(
            "--create-user", action="store_true", help="Create the user if it does not exist."
        )
        create.add_argument(
            "--password-env",
            metavar="VAR",
            help="With --create-user: the new user's sign-in password, read from this environment variable (never argv).",
        )
        create.add_argument(
            "--json", action="store_true", help='Print {"token": ..., "endpoint": ...}.'
        )
        listing = actions.add_parser("list", help="List a user's tokens (prefixes only).")
        listing.add_argument("--user", required=True)
        revoke = actions.add_parser("revoke", help="Revoke a token by its prefix.")
        revoke.add_argument("prefix")

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"_{action}")(**options)

    def _create(
        self,
        *,
        user: str,
        endpoint: str | None,
        scope: str | None,
        name: str,
        create_user: bool,
        json: bool,
        password_env: str | None,
        **_,
    ) -> None:
        if password_env and not create_user:
            raise CommandError(
                "--password-env goes with --create-user (change an existing password with changepassword)."
            )
        owner = self._user(user, create=create_user, password=self._password(password_env))
        target = (
            self._endpoint(owner, endpoint) if endpoint else ensure_default_endpoint(user=owner)
        )
        try:
            token, raw = create_access_token(
                user=owner, name=name, endpoint=target if endpoint else None, scope=scope
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if json:
            self.stdout.write(
                _json_line({"token": raw, "endpoint": target.path, "scope": token.scope})
            )
        else:
            self.stdout.write(f"Token (shown once, store it now): {raw}")
            self.stdout.write(f"Endpoint: {target.path}")
            self.stdout.write(f"Scope: {token.scope_label}")

    def _list(self, *, user: str, **_) -> None:
        for token in AccessToken.objects.filter(user=self._user(user)).select_related("endpoint"):
            state = "active" if token.is_active else "revoked/expired"
            self.stdout.write(
                f"{token.prefix}  {token.name or '-'}  {token.scope_label}  {state}  last used: {token.last_used_at or 'never'}"
            )

    def _revoke(self, *, prefix: str, **_) -> None:
        token = AccessToken.objects.filter(prefix=prefix).first()
        if token is None:
            raise CommandError(f"No token with prefix {prefix!r}.")
        revoke_access_token(token=token)
        self.stdout.write(f"Revoked {prefix}.")

    def _password(self, variable: str | None) -> str | None:
        if variable is None:
            return None
        value = os.environ.get(variable)
        if not value:
            raise CommandError(
                f"--password-env {variable}: that environment variable is not set or empty."
            )
        return value

    def _user(self, username: str, *, create: bool = False, password: str | None = None) -> User:
        user = User.objects.filter(username=username).first()
        if user is None and create:
            user = User.objects.create_user(username, password=password)
            if password is None:
                # The token works at once; the pages need a password, which nobody has been told.
                self.stderr.write(
                    f"Created user {username!r} without a password: the token works, but signing in to the pages "
                    f"needs one — set it with ./hub manage changepassword {username} (or create the user with --password-env VAR)."
                )
        if user is None:
            raise CommandError(f"No user {username!r} (add --create-user to create it).")
        return user

    def _endpoint(self, owner: User, slug: str) -> Endpoint:
        endpoint = Endpoint.objects.filter(owner=owner, slug=slug).first()
        if endpoint is None:
            raise CommandError(f"User {owner.username!r} has no endpoint {slug!r}.")
        return endpoint


def _json_line(payload: dict) -> str:
    return json.dumps(payload, separators=(", ", ": "))
