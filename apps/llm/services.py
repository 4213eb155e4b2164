"""Writes for LLM providers, and the adapter that talks to one.

Every change to a Provider goes through here (keyword-only, atomic) so permissions, the
one-default rule and (later) the audit trail live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.core.exceptions import PermissionDenied
from django.db import transaction

from apps.llm.adapters import Adapter, adapter_class
from apps.llm.adapters.base import Tuning
from apps.llm.detect import LocalServer
from apps.llm.models import Provider
from apps.llm.selectors import manages_shared_providers
from apps.llm.types import LLMError

# The provider's model settings (Tuning), editable wherever its other fields are.
MODEL_SETTINGS = ("reasoning_effort", "thinking_budget", "max_output_tokens")
# Fields a caller may change with update_provider(); api_key has its own rule (None keeps it).
EDITABLE_FIELDS = (
    "name",
    "kind",
    "base_url",
    "default_model",
    "is_default",
    "model_traits",
    *MODEL_SETTINGS,
)


def adapter_for(provider: Provider, *, timeout: float = 120.0) -> Adapter:
    """A ready adapter for `provider` (the key is decrypted on load). Close it with `aclose()`.
    In async code, load the provider with its owner (`select_related("owner")`): see public_only."""
    tuning = Tuning(**{name: getattr(provider, name) for name in MODEL_SETTINGS})
    return adapter_class(provider.kind)(
        base_url=provider.base_url,
        api_key=provider.api_key or None,
        timeout=timeout,
        tuning=tuning,
        public_only=provider.public_only,
    )


def can_edit(user, provider: Provider) -> bool:
    """Staff change shared providers; a private one is its owner's (and a superuser's)."""
    if user is None:  # the operator: management commands, start-up
        return True
    if provider.is_shared:
        return manages_shared_providers(user)
    return provider.owner_id == user.pk or bool(user.is_superuser)


def _check_can_edit(actor, provider: Provider) -> None:
    if not can_edit(actor, provider):
        raise PermissionDenied(
            "Only staff change shared providers; only its owner changes a private one."
        )


@transaction.atomic
def create_provider(
    *,
    actor,
    name: str,
    kind: str,
    base_url: str,
    default_model: str = "",
    api_key: str = "",
    shared: bool = False,
    owner=None,
    is_default: bool = False,
    model_traits: dict | None = None,
    **settings,
) -> Provider:
    """A new provider: private to `owner` (default: the actor), or shared (staff or the operator only)."""
    unknown = set(settings) - set(MODEL_SETTINGS)
    if unknown:
        raise TypeError(f"Not a provider setting: {', '.join(sorted(unknown))}")
    owner = None if shared else (owner or actor)
    if not shared and owner is None:
        raise PermissionDenied("A private provider needs an owner.")
    provider = Provider(
        name=name,
        kind=kind,
        base_url=base_url,
        default_model=default_model,
        api_key=api_key or "",
        owner=owner,
        is_default=is_default,
        model_traits=model_traits or {},
        **settings,
    )
    _check_can_edit(actor, provider)
    return _save(provider)


@transaction.atomic
def update_provider(
    *, actor, provider: Provider, api_key: str | None = None, owner=..., **changes
) -> Provider:
    """Change the given fields; `api_key=None` keeps the stored key, "" removes it.

    `owner` (staff and the operator only) moves a provider: None makes it shared.
    """
    _check_can_edit(actor, provider)
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise TypeError(f"Not editable: {', '.join(sorted(unknown))}")
    for field, value in changes.items():
        setattr(provider, field, value)
    if owner is not ...:
        if actor is not None and not manages_shared_providers(actor):
            raise PermissionDenied("Only staff move a provider to another owner or share it.")
        provider.owner = owner
        _check_can_edit(actor, provider)
    if api_key is not None:
        provider.api_key = api_key
    return _save(provider)


@transaction.atomic
def save_provider(*, actor, provider: Provider, api_key: str | None = None) -> Provider:
    """Save a provider a form has filled in (the admin): the same rules as create and update."""
    if provider.pk is not None:
        _check_can_edit(actor, Provider.objects.get(pk=provider.pk))
    _check_can_edit(actor, provider)
    if api_key is not None:
        provider.api_key = api_key
    return _save(provider)


@transaction.atomic
def delete_provider(*, actor, provider: Provider) -> None:
    _check_can_edit(actor, provider)
    provider.delete()


def _save(provider: Provider) -> Provider:
    if provider.is_default:
        # One default per owner (and one shared default): the new one takes over. Rolled back
        # with everything else if the provider turns out invalid.
        Provider.objects.filter(owner=provider.owner, is_default=True).exclude(
            pk=provider.pk
        ).update(is_default=False)
    provider.full_clean()
    provider.save()
    return provider


@dataclass(frozen=True)
class ConnectionCheck:
    """The outcome of "test connection": the models the provider lists, or its clear error."""

    ok: bool
    models: list[str]
    error: str = ""
    kind: str = ""  # LLMError.kind when not ok

    def __str__(self) -> str:
        if not self.ok:
            return self.error
        return f"Connected: {len(self.models)} model(s)" + (
            f", e.g. {', '.join(self.models[:3])}" if self.models else ""
        )


async def alist_models(provider: Provider, *, timeout: float = 15.0) -> ConnectionCheck:
    return await _check(adapter_for(provider, timeout=timeout))


def list_models(provider: Provider, *, timeout: float = 15.0) -> ConnectionCheck:
    """Test the connection by listing the provider's models (sync views, admin, commands)."""
    return async_to_sync(_check)(
        adapter_for(provider, timeout=timeout)
    )  # built here: it reads the owner


async def _check(adapter: Adapter) -> ConnectionCheck:
    try:
        return ConnectionCheck(ok=True, models=await adapter.list_models())
    except LLMError as exc:
        return ConnectionCheck(ok=False, models=[], error=str(exc), kind=exc.kind)
    finally:
        await adapter.aclose()


def add_local_server(*, actor, server: LocalServer) -> Provider:
    """A detected LM Studio / Ollama as a shared provider; the site default if there is none yet."""
    has_default = Provider.objects.filter(owner__isnull=True, is_default=True).exists()
    return create_provider(
        actor=actor,
        name=server.name,
        kind="openai",
        base_url=server.base_url,
        default_model=server.suggested_model,
        shared=True,
        is_default=not has_default,
    )
