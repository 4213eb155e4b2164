"""Enable (or disable) tools on a user's endpoint by `server.tool` glob patterns."""

from __future__ import annotations

from fnmatch import fnmatchcase

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.accounts.models import User
from apps.catalog.models import Tool
from apps.catalog.selectors import visible_tools
from apps.toolsets.models import Endpoint
from apps.toolsets.selectors import default_endpoint_for, visible_endpoints
from apps.toolsets.services import BudgetExceeded, disable_tools, enable_tools, enabled_token_total


class Command(BaseCommand):
    help = "Enable tools matching `server.tool` glob patterns (e.g. 'github.*', '*.search') on an endpoint."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("patterns", nargs="*", metavar="PATTERN")
        parser.add_argument("--user", required=True)
        parser.add_argument(
            "--endpoint", help="Endpoint slug (default: the user's default endpoint)."
        )
        parser.add_argument(
            "--all", action="store_true", help="Every available tool the user may see."
        )
        parser.add_argument(
            "--disable", action="store_true", help="Disable the matching tools instead."
        )
        parser.add_argument(
            "--ignore-budget", action="store_true", help="Enable even beyond the token budget."
        )

    def handle(
        self, *args, patterns: list[str], all: bool, disable: bool, ignore_budget: bool, **options
    ) -> None:
        if all == bool(patterns):
            raise CommandError("Give either --all or one or more PATTERNs.")
        user = User.objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"No user {options['user']!r}.")
        endpoint = self._endpoint(user, options["endpoint"])
        tools = self._matching(user, patterns, include_unavailable=disable)
        if disable:
            disable_tools(endpoint=endpoint, tools=tools)
        else:
            try:
                enable_tools(
                    endpoint=endpoint, tools=tools, enforce_budget=False if ignore_budget else None
                )
            except BudgetExceeded as exc:
                raise CommandError(
                    f"{exc} Nothing changed; use --ignore-budget or raise the budget."
                ) from None
        verb = "Disabled" if disable else "Enabled"
        self.stdout.write(
            f"{verb} {len(tools)} tool(s) on {endpoint.path}: {', '.join(t.key for t in tools)}"
        )
        self.stdout.write(
            f"Now {endpoint.tools.count()} enabled, ~{enabled_token_total(endpoint)} of {endpoint.token_budget} tokens."
        )

    def _endpoint(self, user: User, slug: str | None) -> Endpoint:
        endpoint = (
            visible_endpoints(user).filter(slug=slug).first()
            if slug
            else default_endpoint_for(user)
        )
        if endpoint is None:
            raise CommandError(f"User {user.username!r} has no endpoint {slug or '(default)'!r}.")
        return endpoint

    def _matching(
        self, user: User, patterns: list[str], *, include_unavailable: bool
    ) -> list[Tool]:
        tools = visible_tools(user)
        if not include_unavailable:
            tools = tools.filter(available=True, server__enabled=True)
        tools = list(tools)
        if not patterns:
            return tools
        unmatched = [p for p in patterns if not any(fnmatchcase(t.key, p) for t in tools)]
        if unmatched:
            raise CommandError(f"No tool matches {', '.join(unmatched)}; nothing changed.")
        return [t for t in tools if any(fnmatchcase(t.key, p) for p in patterns)]
