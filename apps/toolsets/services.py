"""Writes for endpoints (enabled tools, budget) and presets (versions, load)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils.text import slugify

from apps.accounts.models import Membership, Team
from apps.audit.registry import record_set_change, unrecorded
from apps.catalog.models import Tool
from apps.toolsets.events import announce_tools_changed
from apps.toolsets.models import Endpoint, EndpointTool, Preset, PresetVersion
from apps.toolsets.selectors import default_endpoint_for


class BudgetExceeded(ValueError):
    def __init__(self, *, endpoint: Endpoint, total: int) -> None:
        self.total = total
        self.over_by = total - endpoint.token_budget
        super().__init__(
            f"Enabling these tools needs ~{total} tokens, {self.over_by} over the budget of "
            f"{endpoint.token_budget} of the endpoint “{endpoint.name}” ({endpoint.slug})."
        )


def _new_slug(base: str) -> str:
    stem = slugify(base).replace("_", "-").strip("-")[:50] or "endpoint"
    return f"{stem}-{secrets.token_hex(3)}"


def create_endpoint(
    *, owner, name: str, slug: str | None = None, is_default: bool = False, **fields
) -> Endpoint:
    """Create an endpoint; without a slug one is derived from its name (retried on collision).

    Never from the owner's username: the URL goes into client configs, logs and screenshots.
    Slugs already issued are kept as they are, so every URL handed out keeps working.
    """
    for _ in range(5):
        try:
            with transaction.atomic():
                return Endpoint.objects.create(
                    owner=owner,
                    name=name,
                    slug=slug or _new_slug(name),
                    is_default=is_default,
                    **fields,
                )
        except IntegrityError:
            if slug:
                raise
    raise IntegrityError("Could not find a free endpoint slug.")


def ensure_default_endpoint(*, user) -> Endpoint:
    existing = default_endpoint_for(user)
    return existing or create_endpoint(owner=user, name="Default", is_default=True)


def token_total(tools: Iterable[Tool]) -> int:
    return sum(tool.token_estimate for tool in tools)


def enabled_token_total(endpoint: Endpoint) -> int:
    return endpoint.tools.aggregate(total=Sum("token_estimate"))["total"] or 0


@transaction.atomic
def set_enabled_tools(
    *, endpoint: Endpoint, tools: Iterable[Tool], enforce_budget: bool | None = None
) -> None:
    """Make `tools` exactly the endpoint's enabled set (overrides of kept tools survive)."""
    wanted = {tool.pk: tool for tool in tools}
    enforce = endpoint.budget_enforced if enforce_budget is None else enforce_budget
    total = token_total(wanted.values())
    if enforce and total > endpoint.token_budget:
        raise BudgetExceeded(endpoint=endpoint, total=total)
    leaving = EndpointTool.objects.filter(endpoint=endpoint).exclude(tool_id__in=wanted)
    removed = _tool_keys(leaving.values_list("tool_id", flat=True))
    with unrecorded():
        leaving.delete()
    present = set(EndpointTool.objects.filter(endpoint=endpoint).values_list("tool_id", flat=True))
    new_ids = [pk for pk in wanted if pk not in present]
    EndpointTool.objects.bulk_create(
        [EndpointTool(endpoint=endpoint, tool_id=pk) for pk in new_ids]
    )
    record_set_change(instance=endpoint, field="tools", added=_tool_keys(new_ids), removed=removed)
    announce_tools_changed([endpoint.pk])


def _tool_keys(tool_ids: Iterable[int]) -> list[str]:
    """`server.tool` names for the audit trail, in one query."""
    rows = Tool.objects.filter(pk__in=list(tool_ids)).values_list("server__name", "name")
    return [f"{server}.{name}" for server, name in rows]


@transaction.atomic
def enable_tools(
    *, endpoint: Endpoint, tools: Iterable[Tool], enforce_budget: bool | None = None
) -> None:
    """Add `tools` to the enabled set; only the new ones are written (a toggle stays cheap at 2,000 tools)."""
    present = set(EndpointTool.objects.filter(endpoint=endpoint).values_list("tool_id", flat=True))
    new = {tool.pk: tool for tool in tools if tool.pk not in present}
    if not new:
        return
    enforce = endpoint.budget_enforced if enforce_budget is None else enforce_budget
    total = enabled_token_total(endpoint) + token_total(new.values())
    if enforce and total > endpoint.token_budget:
        raise BudgetExceeded(endpoint=endpoint, total=total)
    EndpointTool.objects.bulk_create([EndpointTool(endpoint=endpoint, tool_id=pk) for pk in new])
    record_set_change(instance=endpoint, field="tools", added=_tool_keys(new))
    announce_tools_changed([endpoint.pk])


@transaction.atomic
def disable_tools(*, endpoint: Endpoint, tools: Iterable[Tool]) -> None:
    leaving = EndpointTool.objects.filter(endpoint=endpoint, tool__in=list(tools))
    removed = _tool_keys(leaving.values_list("tool_id", flat=True))
    with unrecorded():
        leaving.delete()
    record_set_change(instance=endpoint, field="tools", removed=removed)
    announce_tools_changed([endpoint.pk])


@transaction.atomic
def save_preset_version(
    *, preset: Preset, tool_keys: Iterable[str], user, note: str = ""
) -> PresetVersion:
    """Append a version; earlier versions stay loadable forever."""
    Preset.objects.select_for_update().filter(pk=preset.pk).first()
    last = preset.versions.order_by("-number").values_list("number", flat=True).first() or 0
    return PresetVersion.objects.create(
        preset=preset, number=last + 1, tool_keys=sorted(set(tool_keys)), created_by=user, note=note
    )


def update_endpoint(*, endpoint: Endpoint, **fields) -> Endpoint:
    """Change an endpoint's settings; a new mode or naming changes what clients see, so announce it."""
    renaming = "naming_strategy" in fields and fields["naming_strategy"] != endpoint.naming_strategy
    for name, value in fields.items():
        setattr(endpoint, name, value)
    endpoint.full_clean()
    with transaction.atomic():
        endpoint.save()
        if renaming:
            forget_exposed_names(endpoint=endpoint)
        if {"mode", "naming_strategy"} & fields.keys():
            announce_tools_changed([endpoint.pk])
    return endpoint


def forget_exposed_names(*, endpoint: Endpoint) -> None:
    """The owner chose another naming strategy: the names kept for clients (naming.py) go with the old one."""
    EndpointTool.objects.filter(endpoint=endpoint).update(exposed_name="")


class DefaultEndpointProtected(ValueError):
    pass


def delete_endpoint(*, endpoint: Endpoint) -> None:
    if endpoint.is_default:
        raise DefaultEndpointProtected("The default endpoint cannot be deleted.")
    endpoint.delete()


def set_tool_enabled(*, endpoint: Endpoint, tool: Tool, enabled: bool) -> None:
    """Toggle one tool; enabling respects the endpoint's budget."""
    if enabled:
        enable_tools(endpoint=endpoint, tools=[tool])
    else:
        disable_tools(endpoint=endpoint, tools=[tool])


def set_tools_enabled(*, endpoint: Endpoint, tools: Iterable[Tool], enabled: bool) -> None:
    """Toggle a group of tools at once (e.g. all of one server's) as one change."""
    if enabled:
        enable_tools(endpoint=endpoint, tools=tools)
    else:
        disable_tools(endpoint=endpoint, tools=tools)


# --- Presets.

LoadMode = Literal["replace", "merge"]


@dataclass(frozen=True)
class LoadResult:
    """What loading a preset did: the keys it enabled and those it could not find (gone or hidden)."""

    loaded: list[str]
    missing: list[str]


@transaction.atomic
def create_preset(
    *,
    owner,
    name: str,
    tool_keys: Iterable[str],
    description: str = "",
    team: Team | None = None,
    note: str = "",
) -> Preset:
    """A new preset with its first version; shared with `team` when one is given."""
    if team is not None:
        _check_member(user=owner, team=team)
    preset = Preset.objects.create(
        owner=owner,
        name=name,
        description=description,
        team=team,
        visibility=Preset.Visibility.TEAM if team else Preset.Visibility.PRIVATE,
    )
    save_preset_version(preset=preset, tool_keys=tool_keys, user=owner, note=note or "Created")
    return preset


@dataclass(frozen=True)
class PresetSave:
    """What saving an endpoint's tools under a name did: the version it added after `previous`.

    `version` is None when the owner's preset of that name already held exactly these tools;
    `previous` is None when the save created the preset.
    """

    preset: Preset
    version: PresetVersion | None
    previous: PresetVersion | None


@transaction.atomic
def save_endpoint_as_preset(
    *, endpoint: Endpoint, name: str, team: Team | None = None
) -> PresetSave:
    """Save the endpoint's tools as a new version of its owner's preset `name` (any case), or a new preset.

    A chosen team shares the preset with it; choosing none leaves an existing preset's sharing as it is.
    """
    owner = endpoint.owner
    keys = [tool.key for tool in endpoint.tools.select_related("server")]
    # Several presets may share a name from before saves became versions: the latest touched one wins.
    preset = (
        Preset.objects.select_for_update()
        .filter(owner=owner, name__iexact=name.strip())
        .order_by("-updated_at", "-pk")
        .first()
    )
    if preset is None:
        preset = create_preset(owner=owner, name=name.strip(), tool_keys=keys, team=team)
        return PresetSave(preset=preset, version=preset.latest_version, previous=None)
    previous = preset.latest_version
    update_preset(preset=preset, user=owner, tool_keys=keys, note=f"Saved from {endpoint.name}")
    if team is not None and preset.team_id != team.pk:
        share_preset(preset=preset, team=team, user=owner)
    latest = preset.latest_version
    return PresetSave(
        preset=preset, version=None if latest == previous else latest, previous=previous
    )


@transaction.atomic
def update_preset(
    *, preset: Preset, user, tool_keys: Iterable[str] | None = None, note: str = "", **fields
) -> Preset:
    """Rename or describe a preset; new tool keys append a version (unchanged keys do not)."""
    for name, value in fields.items():
        setattr(preset, name, value)
    preset.save()
    if tool_keys is not None:
        keys = sorted(set(tool_keys))
        latest = preset.latest_version
        if latest is None or latest.tool_keys != keys:
            save_preset_version(preset=preset, tool_keys=keys, user=user, note=note)
    return preset


def _check_member(*, user, team: Team) -> None:
    if not Membership.objects.filter(user=user, team=team).exists():
        raise PermissionDenied(f"You are not a member of team '{team.slug}'.")


def share_preset(*, preset: Preset, team: Team, user) -> Preset:
    _check_member(user=user, team=team)
    preset.team, preset.visibility = team, Preset.Visibility.TEAM
    preset.save(update_fields=["team", "visibility", "updated_at"])
    return preset


def unshare_preset(*, preset: Preset) -> Preset:
    preset.team, preset.visibility = None, Preset.Visibility.PRIVATE
    preset.save(update_fields=["team", "visibility", "updated_at"])
    return preset


def rollback_preset(*, preset: Preset, number: int, user) -> PresetVersion:
    """Roll back by appending a copy of version `number`: the versions after it stay, too."""
    old = preset.versions.get(number=number)
    return save_preset_version(
        preset=preset, tool_keys=old.tool_keys, user=user, note=f"Rolled back to v{number}"
    )


@transaction.atomic
def load_preset(
    *, endpoint: Endpoint, version: PresetVersion, tools: Iterable[Tool], mode: LoadMode = "replace"
) -> LoadResult:
    """Enable `version`'s tools on `endpoint`, replacing or merging with what is enabled.

    `tools` are the tools the endpoint's owner may enable (the caller scopes them); keys of the
    version that match none of them are reported as missing rather than failing the load.
    """
    by_key = {tool.key: tool for tool in tools}
    found = [by_key[key] for key in version.tool_keys if key in by_key]
    missing = [key for key in version.tool_keys if key not in by_key]
    if mode == "merge":
        enable_tools(endpoint=endpoint, tools=found)
    else:
        set_enabled_tools(endpoint=endpoint, tools=found)
    return LoadResult(loaded=[tool.key for tool in found], missing=missing)
