"""An endpoint as its MCP clients see it, built from the catalog and cached per version.

Everything `tools/list`, `resources/list` and `prompts/list` answer comes from here, so listing
never touches a backend; `tools/call` finds its backend and spec here.
"""

from __future__ import annotations

import functools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

import re2

from apps.catalog.models import McpServer, Prompt, Resource, ResourceTemplate, Tool
from apps.catalog.selectors import visible_servers
from apps.connections.specs import ServerSpec
from apps.core.singleflight import single_flight
from apps.credentials.errors import CredentialsMissing
from apps.credentials.selectors import specs_for_user
from apps.toolsets import naming
from apps.toolsets.models import Endpoint, EndpointTool


@dataclass(frozen=True)
class Exposed:
    """One tool or prompt under its exposed name, and where it really lives."""

    name: str
    server: str
    backend_name: str
    item_id: int
    entry: dict[str, Any]
    tokens: int = 0  # the catalog's estimate of what listing it costs a model's context


@dataclass
class EndpointView:
    endpoint_id: int
    owner_id: int
    slug: str
    version: object
    mode: str = "static"
    tools: dict[str, Exposed] = field(default_factory=dict)
    prompts: dict[str, Exposed] = field(default_factory=dict)
    resources: list[dict[str, Any]] = field(default_factory=list)
    resource_servers: dict[str, str] = field(default_factory=dict)
    templates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    specs: dict[str, ServerSpec] = field(default_factory=dict)
    # Servers whose spec the owner cannot have yet (required user variables not filled).
    missing: dict[str, CredentialsMissing] = field(default_factory=dict)
    tool_list_json: list[str] = field(default_factory=list)
    # time.monotonic() past which the view must be rebuilt: a user's upstream OAuth token it
    # holds is then due for a refresh (apps.credentials); infinite without such tokens.
    fresh_until: float = float("inf")

    def spec(self, server: str) -> ServerSpec:
        """The owner's spec for `server`; raises `CredentialsMissing` (a PoolError) saying what to fill."""
        return spec_or_missing(self.specs, self.missing, server)

    def resource_server(self, uri: str) -> str | None:
        """The server that serves `uri`: a listed resource's, else the first whose template matches."""
        server = self.resource_servers.get(uri)
        if server is not None:
            return server
        for owner, entry in self.templates:
            try:
                if _template_regex(entry["uriTemplate"]).match(uri):
                    return owner
            except re2.error:  # a template too large for RE2 matches nothing
                continue
        return None


def _template_regex(template: str):
    """A backend's URI template as a regex, on RE2: with Python's backtracking `re`, a template of
    consecutive `{+x}` (`.+.+.+…`) against a long URI a client sends takes time exponential in
    their number (six and 120 characters: 23 s)."""
    parts = re.split(r"(\{[^}]*\})", template)
    pattern = "".join(
        (".+" if part.startswith("{+") else "[^/]+") if part.startswith("{") else re2.escape(part)
        for part in parts
    )
    return re2.compile(f"^{pattern}$", _TEMPLATE_OPTIONS)


_TEMPLATE_OPTIONS = re2.Options()
_TEMPLATE_OPTIONS.log_errors = False
_TEMPLATE_OPTIONS.never_capture = True


def spec_or_missing(
    specs: dict[str, ServerSpec], missing: dict[str, CredentialsMissing], server: str
) -> ServerSpec:
    found = specs.get(server)
    if found is not None:
        return found
    why = missing[server]  # neither: a KeyError, as for any server the view does not hold
    raise CredentialsMissing(
        why.server, why.message, missing=why.missing, fill_at=why.fill_at, api=why.api
    )


def build(endpoint_id: int, version: object, *, page_size: int) -> EndpointView | None:
    """Read the catalog for one endpoint (sync ORM: call from a thread)."""
    endpoint = Endpoint.objects.select_related("owner").filter(pk=endpoint_id).first()
    if endpoint is None:
        return None
    view = EndpointView(endpoint.pk, endpoint.owner_id, endpoint.slug, version, endpoint.mode)
    servers = {s.pk: s for s in visible_servers(endpoint.owner).filter(enabled=True)}
    enabled = list(
        EndpointTool.objects.filter(
            endpoint=endpoint, tool__available=True, tool__server_id__in=servers
        )
        .select_related("tool")
        .order_by("tool__server__name", "tool__name")
    )
    _add_tools(view, enabled, servers, endpoint.naming_strategy)
    used = {servers[et.tool.server_id] for et in enabled}
    view.specs, view.missing = specs_for_user(used, endpoint.owner_id)
    view.fresh_until = _fresh_until([s.pk for s in used if s.oauth], endpoint.owner_id)
    _add_prompts(view, used, endpoint.naming_strategy)
    _add_resources(view, used)
    view.tool_list_json = _pages([t.entry for t in view.tools.values()], page_size)
    return view


def _add_tools(
    view: EndpointView, enabled: list[EndpointTool], servers: dict[int, McpServer], strategy: str
) -> None:
    candidates = [candidate(servers[et.tool.server_id].name, et.tool.name, et) for et in enabled]
    names = naming.assign(candidates, strategy)
    keep_names(enabled, names)
    for et, name in zip(enabled, names):
        tool = et.tool
        view.tools[name] = Exposed(
            name,
            servers[tool.server_id].name,
            tool.name,
            tool.pk,
            tool_entry(tool, name, et.description_override),
            tool.token_estimate,
        )


def candidate(server_name: str, tool_name: str, et: EndpointTool | None) -> naming.Candidate:
    """A tool to name; enabled (`et`), it brings the owner's override and the name clients saw."""
    if et is None:
        return naming.Candidate(server_name, tool_name)
    return naming.Candidate(server_name, tool_name, et.name_override, et.exposed_name)


def keep_names(enabled: list[EndpointTool], names: list[str]) -> None:
    """Store the name each enabled tool is exposed under the first time it is (not an owner's
    override, which is kept anyway): later additions name themselves around it."""
    first = []
    for et, name in zip(enabled, names):
        if not et.exposed_name and not et.name_override:
            et.exposed_name = name
            first.append(et)
    if first:
        EndpointTool.objects.bulk_update(first, ["exposed_name"])


MIN_FRESH_SECONDS = 5.0


def _fresh_until(oauth_server_ids: list[int], user_id: int) -> float:
    if not oauth_server_ids:
        return float("inf")
    from apps.credentials.upstream.selectors import refresh_deadline

    deadline = refresh_deadline(oauth_server_ids, user_id)
    if deadline is None:
        return float("inf")
    # At least a few seconds: a refresh that failed (authorization server down) is not retried per request.
    return time.monotonic() + max(deadline.timestamp() - time.time(), MIN_FRESH_SECONDS)


def tool_entry(tool: Tool, name: str, description_override: str = "") -> dict[str, Any]:
    """The tool's definition as `tools/list` shows it, under its exposed name."""
    entry = {
        "name": name,
        "description": description_override or tool.description,
        "inputSchema": tool.input_schema,
    }
    if tool.title:
        entry["title"] = tool.title
    if tool.output_schema:
        entry["outputSchema"] = tool.output_schema
    if tool.annotations:
        entry["annotations"] = tool.annotations
    if tool.execution:
        entry["execution"] = tool.execution
    return entry


def _add_prompts(view: EndpointView, servers: set[McpServer], strategy: str) -> None:
    prompts = list(
        Prompt.objects.filter(server__in=servers, available=True)
        .select_related("server")
        .order_by("server__name", "name")
    )
    names = naming.assign([naming.Candidate(p.server.name, p.name) for p in prompts], strategy)
    for prompt, name in zip(prompts, names):
        entry = {"name": name, "description": prompt.description, "arguments": prompt.arguments}
        if prompt.title:
            entry["title"] = prompt.title
        view.prompts[name] = Exposed(name, prompt.server.name, prompt.name, prompt.pk, entry)


def _add_resources(view: EndpointView, servers: set[McpServer]) -> None:
    for resource in (
        Resource.objects.filter(server__in=servers, available=True)
        .select_related("server")
        .order_by("server__name", "uri")
    ):
        entry = {"uri": resource.uri, "name": resource.name}
        _optional(
            entry,
            title=resource.title,
            description=resource.description,
            mimeType=resource.mime_type,
            size=resource.size,
            annotations=resource.annotations,
        )
        view.resources.append(entry)
        view.resource_servers.setdefault(resource.uri, resource.server.name)
    templates = ResourceTemplate.objects.filter(server__in=servers, available=True).select_related(
        "server"
    )
    for template in templates.order_by("server__name", "uri_template"):
        entry = {"uriTemplate": template.uri_template, "name": template.name}
        _optional(
            entry,
            title=template.title,
            description=template.description,
            mimeType=template.mime_type,
            annotations=template.annotations,
        )
        view.templates.append((template.server.name, entry))


def _optional(entry: dict[str, Any], **values: Any) -> None:
    entry.update({key: value for key, value in values.items() if value not in (None, "")})


def _pages(entries: list[dict[str, Any]], page_size: int) -> list[str]:
    """Each page's `"tools": [...]` JSON, serialized once per view rather than per request."""
    return [
        json.dumps(entries[i : i + page_size], separators=(",", ":"))
        for i in range(0, len(entries), page_size)
    ] or ["[]"]


# -- the per-process cache -----------------------------------------------------------

# Safety net for changes no event announces (e.g. a row edited by hand): views expire anyway.
VIEW_MAX_AGE = 30.0
_views: dict[int, tuple[float, EndpointView]] = {}


async def current(endpoint_id: int, version: object, *, page_size: int) -> EndpointView | None:
    """The endpoint's view at `version`, built at most once per version per process."""
    cached = _views.get(endpoint_id)
    now = time.monotonic()
    if (
        cached is not None
        and cached[1].version == version
        and now - cached[0] < VIEW_MAX_AGE
        and now < cached[1].fresh_until
    ):
        return cached[1]
    view = await single_flight(
        "exposure",
        (endpoint_id, version),
        functools.partial(build, endpoint_id, version, page_size=page_size),
    )
    if view is not None:
        _views[endpoint_id] = (now, view)
    return view


def forget_views() -> None:
    _views.clear()
