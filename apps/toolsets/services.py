"""Writes for endpoints (enabled tools, budget) and presets (versions, load)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils.text import slugify

from apps.catalog.models import Tool
from apps.toolsets.events import announce_tools_changed
from apps.toolsets.models import Endpoint, EndpointTool, Preset, PresetVersion


class BudgetExceeded(ValueError):
    def __init__(self, *, endpoint: Endpoint, total: int) -> None:
        self.total = total
        self.over_by = total - endpoint.token_budget
        super().__init__(
            f"Enabling these tools needs ~{total} tokens, {self.over_by} over the endpoint "
            f"'{endpoint.slug}' budget of {endpoint.token_budget}."
        )


def _new_slug(base: str) -> str:
    stem = slugify(base).replace("_", "-").strip("-")[:50] or "endpoint"
    return f"{stem}-{secrets.token_hex(3)}"


def create_endpoint(*, owner, name: str, slug: str | None = None, is_default: bool = False, **fields) -> Endpoint:
    """Create an endpoint; without a slug one is derived from the owner (retried on collision)."""
    for _ in range(5):
        try:
            with transaction.atomic():
                return Endpoint.objects.create(
                    owner=owner, name=name, slug=slug or _new_slug(owner.username), is_default=is_default, **fields
                )
        except IntegrityError:
            if slug:
                raise
    raise IntegrityError("Could not find a free endpoint slug.")


def ensure_default_endpoint(*, user) -> Endpoint:
    existing = Endpoint.objects.filter(owner=user, is_default=True).first()
    return existing or create_endpoint(owner=user, name="Default", is_default=True)


def token_total(tools: Iterable[Tool]) -> int:
    return sum(tool.token_estimate for tool in tools)


def enabled_token_total(endpoint: Endpoint) -> int:
    return endpoint.tools.aggregate(total=Sum("token_estimate"))["total"] or 0


@transaction.atomic
def set_enabled_tools(*, endpoint: Endpoint, tools: Iterable[Tool], enforce_budget: bool | None = None) -> None:
    """Make `tools` exactly the endpoint's enabled set (overrides of kept tools survive)."""
    wanted = {tool.pk: tool for tool in tools}
    enforce = endpoint.budget_enforced if enforce_budget is None else enforce_budget
    total = token_total(wanted.values())
    if enforce and total > endpoint.token_budget:
        raise BudgetExceeded(endpoint=endpoint, total=total)
    EndpointTool.objects.filter(endpoint=endpoint).exclude(tool_id__in=wanted).delete()
    present = set(EndpointTool.objects.filter(endpoint=endpoint).values_list("tool_id", flat=True))
    EndpointTool.objects.bulk_create(
        [EndpointTool(endpoint=endpoint, tool_id=pk) for pk in wanted if pk not in present]
    )
    announce_tools_changed([endpoint.pk])


def enable_tools(*, endpoint: Endpoint, tools: Iterable[Tool], enforce_budget: bool | None = None) -> None:
    set_enabled_tools(endpoint=endpoint, tools=[*endpoint.tools.all(), *tools], enforce_budget=enforce_budget)


@transaction.atomic
def disable_tools(*, endpoint: Endpoint, tools: Iterable[Tool]) -> None:
    EndpointTool.objects.filter(endpoint=endpoint, tool__in=list(tools)).delete()
    announce_tools_changed([endpoint.pk])


@transaction.atomic
def save_preset_version(*, preset: Preset, tool_keys: Iterable[str], user, note: str = "") -> PresetVersion:
    """Append a version; earlier versions stay loadable forever."""
    Preset.objects.select_for_update().filter(pk=preset.pk).first()
    last = preset.versions.order_by("-number").values_list("number", flat=True).first() or 0
    return PresetVersion.objects.create(
        preset=preset, number=last + 1, tool_keys=sorted(set(tool_keys)), created_by=user, note=note
    )
