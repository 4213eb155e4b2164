"""Manage LLM providers from scripts: `manage.py mcp_llm add NAME --kind openai --base-url URL --model M`."""

from __future__ import annotations

import os

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.llm import detect, services
from apps.llm.adapters import kinds
from apps.llm.models import Provider


class Command(BaseCommand):
    help = "Add, list, remove or detect LLM providers. API keys come from an environment variable, never argv."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser(
            "add", help="Add a provider (or replace the one with the same name and scope)."
        )
        add.add_argument("name")
        add.add_argument("--kind", required=True, choices=kinds())
        add.add_argument(
            "--base-url", required=True, help="e.g. http://127.0.0.1:1234/v1 (LM Studio)"
        )
        add.add_argument("--model", required=True, help="The default model.")
        add.add_argument(
            "--api-key-env", metavar="VAR", help="Read the API key from this environment variable."
        )
        scope = add.add_mutually_exclusive_group(required=True)
        scope.add_argument("--shared", action="store_true", help="Shared with every user.")
        scope.add_argument("--owner", metavar="USERNAME", help="Private to this user.")
        add.add_argument(
            "--default",
            action="store_true",
            help="Make it the default (of its owner, or the site's).",
        )
        add.add_argument(
            "--reasoning-effort",
            default="",
            help="OpenAI-compatible reasoning models: minimal, low, medium, high.",
        )
        add.add_argument(
            "--thinking-budget",
            type=int,
            help="Anthropic: turn extended thinking on with this budget (>= 1024).",
        )
        add.add_argument(
            "--max-output-tokens",
            type=int,
            help="The longest reply in tokens (default: the model's own).",
        )
        actions.add_parser("list", help="List every provider (keys are never shown).")
        remove = actions.add_parser("remove", help="Remove a provider by name.")
        remove.add_argument("name")
        remove.add_argument(
            "--owner", metavar="USERNAME", help="Whose private provider (default: the shared one)."
        )
        found = actions.add_parser(
            "detect", help="Add a local LM Studio / Ollama that answers as a shared provider."
        )
        found.add_argument(
            "--if-none", action="store_true", help="Only when no provider exists yet (first run)."
        )

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"_{action}")(**options)

    def _add(
        self,
        *,
        name: str,
        kind: str,
        base_url: str,
        model: str,
        api_key_env: str | None,
        shared: bool,
        owner: str | None,
        default: bool,
        reasoning_effort: str,
        thinking_budget: int | None,
        max_output_tokens: int | None,
        **_,
    ) -> None:
        settings = {
            "reasoning_effort": reasoning_effort,
            "thinking_budget": thinking_budget,
            "max_output_tokens": max_output_tokens,
        }
        api_key = self._key_from(api_key_env)
        user = self._user(owner) if owner else None
        existing = Provider.objects.filter(name=name, owner=user).first()
        try:
            if existing:
                services.update_provider(
                    actor=None,
                    provider=existing,
                    kind=kind,
                    base_url=base_url,
                    default_model=model,
                    is_default=default or existing.is_default,
                    api_key=api_key,
                    **settings,
                )
            else:
                services.create_provider(
                    actor=None,
                    name=name,
                    kind=kind,
                    base_url=base_url,
                    default_model=model,
                    api_key=api_key or "",
                    shared=shared,
                    owner=user,
                    is_default=default,
                    **settings,
                )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        scope = "shared" if shared else f"private to {owner}"
        self.stdout.write(
            f"{'Updated' if existing else 'Added'} {scope} provider {name!r} ({kind}, {base_url}, model {model})."
        )

    def _list(self, **_) -> None:
        rows = Provider.objects.select_related("owner").order_by("owner__username", "name")
        if not rows:
            self.stdout.write(
                "No LLM providers yet. Add one: ./hub manage mcp_llm add NAME --kind openai --base-url URL --model M --shared"
            )
        for p in rows:
            scope = "shared" if p.is_shared else f"owner={p.owner.get_username()}"
            flags = " ".join(
                f for f, on in (("default", p.is_default), ("key", p.has_api_key)) if on
            )
            self.stdout.write(
                f"{p.name}\t{p.kind}\t{p.base_url}\tmodel={p.default_model or '-'}\t{scope}\t{flags}".rstrip()
            )

    def _remove(self, *, name: str, owner: str | None, **_) -> None:
        provider = Provider.objects.filter(
            name=name, owner=self._user(owner) if owner else None
        ).first()
        if provider is None:
            where = f"of {owner}" if owner else "shared"
            raise CommandError(
                f"No {where} provider named {name!r} (see: ./hub manage mcp_llm list)."
            )
        services.delete_provider(actor=None, provider=provider)
        self.stdout.write(f"Removed provider {name!r}.")

    def _detect(self, *, if_none: bool, verbosity: int, **_) -> None:
        if if_none and Provider.objects.exists():
            return
        servers = detect.detect_unconfigured()
        for server in servers:
            provider = services.add_local_server(actor=None, server=server)
            default = " (the default)" if provider.is_default else ""
            self.stdout.write(
                f"Found {server.label} at {server.base_url} with {len(server.models)} model(s): added it "
                f"as shared provider {provider.name!r}{default}, model {provider.default_model or '-'}."
            )
        if not servers and verbosity >= 1:
            tried = ", ".join(f"{label} ({url})" for label, url in detect.candidates())
            self.stdout.write(
                f"No local LLM server answered ({tried}); add a provider on the Models page "
                "or with: ./hub manage mcp_llm add NAME --kind openai --base-url URL --model M --shared"
            )

    def _key_from(self, variable: str | None) -> str | None:
        if not variable:
            return None
        value = os.environ.get(variable)
        if not value:
            raise CommandError(f"The environment variable {variable} is not set (or empty).")
        return value

    def _user(self, username: str):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        return user
