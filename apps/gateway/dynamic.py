"""Dynamic mode: an endpoint lists its pinned tools, the tools this session loaded, and four
meta-tools to find and load the rest within the endpoint's token budget.

`search_tools` ranks every tool the owner may enable (apps.discovery); `load_tools` and
`unload_tools` change the session's loaded set and push `notifications/tools/list_changed`;
`call_tool` calls any of them for clients that ignore list changes. Each is in the call log
under its own name (`call_tool` under the tool it called).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from apps.catalog.introspection import estimate_tokens
from apps.core.threads import in_thread
from apps.discovery import catalog as discovery_catalog
from apps.discovery import loading
from apps.discovery import services as discovery_services
from apps.discovery.catalog import Catalog
from apps.gateway import context, state
from apps.gateway.jsonrpc import INVALID_PARAMS, RpcError
from apps.toolsets import calls
from apps.toolsets.exposure import Exposed

SEARCH, LOAD, UNLOAD, CALL = "search_tools", "load_tools", "unload_tools", "call_tool"
MAX_LIMIT = 50
MAX_NAMES = 50
# Characters of a search_tools query: the search runs on the event loop, and a 1 MB query cost
# BM25 0.6 s there (the request body may be 4 MB).
MAX_QUERY = 2000
MAX_QUERIES = 8  # several requests searched at once (`queries`): each is one part of the search

_NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": MAX_NAMES}
META_TOOLS: list[dict[str, Any]] = [
    {
        "name": SEARCH,
        "description": "Search every tool this hub can give you by what it does. Returns the best matches "
        "(name, server, description, token cost, score); then load_tools the ones you need, or call_tool one directly.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "maxLength": MAX_QUERY,
                    "description": "What you want to do, in a few words",
                },
                "queries": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": MAX_QUERY},
                    "minItems": 1,
                    "maxItems": MAX_QUERIES,
                    "description": "Several things you need at once (instead of query): each gets "
                    "its own chance, the results are merged",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": 10,
                    "description": "How many tools to return",
                },
            },
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "tools": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "server": {"type": "string"},
                            "description": {"type": "string"},
                            "tokens": {"type": "integer"},
                            "score": {"type": "number"},
                        },
                        "required": ["name", "server", "description", "tokens", "score"],
                    },
                }
            },
            "required": ["tools"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": LOAD,
        "description": "Add tools (names from search_tools) to your tool list. Stays within the endpoint's token "
        "budget: the least recently used loaded tools are unloaded to make room, and the result says which.",
        "inputSchema": {"type": "object", "properties": {"names": _NAMES}, "required": ["names"]},
    },
    {
        "name": UNLOAD,
        "description": "Remove loaded tools from your tool list to free context.",
        "inputSchema": {"type": "object", "properties": {"names": _NAMES}, "required": ["names"]},
    },
    {
        "name": CALL,
        "description": "Call any tool search_tools found, loaded or not, with its arguments.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name"],
        },
    },
]
META_NAMES = frozenset(t["name"] for t in META_TOOLS)
# How the call log names them: no catalog tool, served by the gateway itself.
META_EXPOSED = {
    t["name"]: Exposed(
        name=t["name"],
        server=context.SERVER_INFO["name"],
        backend_name=t["name"],
        item_id=None,  # type: ignore[arg-type]  # not a catalog tool
        entry=t,
    )
    for t in META_TOOLS
}
# What the four meta-tools add to a dynamic endpoint's listing (the endpoint page shows it).
META_TOKENS = sum(estimate_tokens(t) for t in META_TOOLS)


async def _catalog(ctx: context.Context) -> Catalog:
    catalog = await discovery_catalog.current(ctx.endpoint.id, ctx.view.version)
    if catalog is None:
        raise RpcError(INVALID_PARAMS, "This endpoint no longer exists")
    return catalog


def _loaded(ctx: context.Context, catalog: Catalog) -> dict[str, float]:
    return loading.current(catalog, ctx.session.loaded) if ctx.session is not None else {}


async def tools_list(ctx: context.Context, params: dict[str, Any]) -> dict[str, Any]:
    catalog = await _catalog(ctx)
    loaded = _loaded(ctx, catalog)
    tools = [e.exposed.entry for e in catalog.pinned]
    tools += [catalog.entries[name].exposed.entry for name in sorted(loaded)]
    return context.listing("tools", tools + META_TOOLS, params)


async def tools_call(
    ctx: context.Context, name: str, arguments: dict[str, Any], params: dict[str, Any]
) -> dict[str, Any]:
    catalog = await _catalog(ctx)
    target = arguments.get("name")
    if name == CALL and isinstance(target, str) and target in catalog.entries:
        # Logged as the tool it calls (context.call_exposed), the call that really happened.
        return await _call(
            ctx,
            catalog,
            target,
            context.param_mapping(arguments, "arguments"),
            params,
            anywhere=True,
        )
    if name in META_NAMES:
        return await calls.logged(
            user_id=ctx.principal.user_id,
            endpoint_id=ctx.endpoint.id,
            exposed=META_EXPOSED[name],
            arguments=arguments,
            work=_meta_tool(ctx, catalog, name, arguments),
        )
    return await _call(ctx, catalog, name, arguments, params, anywhere=False)


async def _meta_tool(
    ctx: context.Context, catalog: Catalog, name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    if name == SEARCH:
        payload = await discovery_catalog.off_loop(
            _search, catalog, arguments, _loaded(ctx, catalog)
        )
        if ctx.session is not None:  # what this search leads to is learned (usage prior)
            await discovery_services.remember_search(
                session_id=ctx.session.id,
                queries=_queries(arguments),
                names=[t["name"] for t in payload["tools"]],
            )
        activated = await _activate(ctx, catalog, "\n".join(_queries(arguments)))
        return _result({**payload, "activated": activated} if activated else payload)
    if name in (LOAD, UNLOAD):
        return await _change(ctx, catalog, name, _names(arguments))
    target = context.param_name(arguments)  # call_tool of a tool the catalog does not hold
    return _result({"error": str(_not_listed(catalog, target, known=False).message)}, error=True)


def _result(payload: dict[str, Any], *, error: bool = False) -> dict[str, Any]:
    result = {
        "content": [{"type": "text", "text": json.dumps(payload, indent=1)}],
        "structuredContent": payload,
    }
    if error:
        result["isError"] = True
    return result


def _search(
    catalog: Catalog, arguments: dict[str, Any], loaded: dict[str, float]
) -> dict[str, list[dict[str, Any]]]:
    queries = _queries(arguments)
    limit = arguments.get("limit", 10)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise RpcError(
            INVALID_PARAMS, f"Invalid params: 'limit' must be an integer from 1 to {MAX_LIMIT}"
        )
    held = frozenset(catalog.entries[n].exposed.item_id for n in loaded) | {
        e.exposed.item_id for e in catalog.pinned
    }
    hits = catalog.search(queries[0] if len(queries) == 1 else queries, limit, beside=held)
    tools = [
        {
            "name": h.entry.name,
            "server": h.entry.exposed.server,
            "description": h.entry.description,
            "tokens": h.entry.tokens,
            "score": h.score,
        }
        for h in hits
    ]
    return {"tools": tools}


def _queries(arguments: dict[str, Any]) -> list[str]:
    """search_tools' `query`, or its `queries` (several requests searched as parts of one)."""
    several = arguments.get("queries")
    if several is None:
        query = arguments.get("query")
        if not isinstance(query, str) or not query:
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: 'query' must be a non-empty string (or 'queries' a list of them)",
            )
        queries = [query]
    elif (
        isinstance(several, list)
        and 1 <= len(several) <= MAX_QUERIES
        and all(isinstance(q, str) and q.strip() for q in several)
    ):
        single = arguments.get("query")
        queries = [*([single] if isinstance(single, str) and single.strip() else []), *several]
        queries = list(dict.fromkeys(queries))[:MAX_QUERIES]
    else:
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: 'queries' must be a list of 1 to {MAX_QUERIES} non-empty strings",
        )
    if any(len(q) > MAX_QUERY for q in queries):
        key = "query" if several is None else "queries"
        raise RpcError(
            INVALID_PARAMS, f"Invalid params: '{key}' must be at most {MAX_QUERY} characters"
        )
    return queries


def _names(arguments: dict[str, Any]) -> list[str]:
    names = arguments.get("names")
    if isinstance(names, str):
        names = [names]
    if not (
        isinstance(names, list)
        and names
        and len(names) <= MAX_NAMES
        and all(isinstance(n, str) and n for n in names)
    ):
        raise RpcError(
            INVALID_PARAMS, f"Invalid params: 'names' must be a list of 1 to {MAX_NAMES} tool names"
        )
    return names


async def _change(
    ctx: context.Context, catalog: Catalog, action: str, names: list[str]
) -> dict[str, Any]:
    if ctx.session is None:
        return _result(
            {
                "error": "This protocol version keeps no session, so nothing can be loaded: use call_tool."
            },
            error=True,
        )
    if action == LOAD:
        outcome = await in_thread(loading.load)(catalog, ctx.session.loaded, names)
        await _learn(ctx, catalog, outcome.loaded)
    else:
        outcome = loading.unload(catalog, ctx.session.loaded, names)
    ctx.session.loaded = outcome.state
    await state.save_session(ctx.session)
    if outcome.changed:
        await _announce(ctx)
    payload = {
        "loaded": outcome.loaded,
        "unloaded": outcome.unloaded,
        "unchanged": outcome.unchanged,
        "errors": outcome.errors,
        "tokens": loading.loaded_tokens(catalog, outcome.state),
        "budget": catalog.token_budget,
    }
    return _result(
        payload, error=bool(outcome.errors) and not outcome.changed and not outcome.unchanged
    )


async def _activate(
    ctx: context.Context, catalog: Catalog, text: str
) -> dict[str, list[str]] | None:
    """Pre-load what the endpoint's activation patterns name for `text` (within the budget)."""
    # Up to milliseconds per pattern (RE2 releases the GIL): never on the event loop.
    names = (
        await in_thread(catalog.activated)(text)
        if catalog.patterns and ctx.session is not None
        else []
    )
    fresh = (
        [n for n in names if n not in ctx.session.loaded and not catalog.entries[n].pinned]
        if names
        else []
    )
    if not fresh:
        return None
    outcome = await in_thread(loading.load)(catalog, ctx.session.loaded, fresh)
    ctx.session.loaded = outcome.state
    await state.save_session(ctx.session)
    if outcome.changed:
        await _announce(ctx)
    return {"loaded": outcome.loaded, "unloaded": outcome.unloaded}


async def _announce(ctx: context.Context) -> None:
    """list_changed on this request's own stream when it has one, else on the session's GET stream."""
    if ctx.emitter is not None and ctx.emitter.can_request:
        await ctx.emitter.notify("notifications/tools/list_changed", {})
        return
    from apps.gateway.mailbox import mailbox
    from apps.gateway.streams import session_group
    from apps.toolsets.events import TOOLS_CHANGED

    await mailbox().publish(session_group(ctx.session.id), {"type": TOOLS_CHANGED})


async def _call(
    ctx: context.Context,
    catalog: Catalog,
    name: str,
    arguments: dict[str, Any],
    params: dict[str, Any],
    *,
    anywhere: bool,
) -> dict[str, Any]:
    entry = catalog.entries.get(name)
    listed = entry is not None and (entry.pinned or name in _loaded(ctx, catalog))
    if entry is None or not (listed or anywhere):
        raise _not_listed(catalog, name, known=entry is not None)
    view = dataclasses.replace(
        ctx.view,
        specs={**ctx.view.specs, **catalog.specs},
        missing={**ctx.view.missing, **catalog.missing},
    )
    result = await context.call_exposed(
        dataclasses.replace(ctx, view=view), entry.exposed, arguments, params
    )
    if anywhere and not listed:  # call_tool of a tool a search found: as good as loading it
        await _learn(ctx, catalog, [name])
    await _activate(ctx, catalog, f"{name} {json.dumps(arguments)}")
    return result


async def _learn(ctx: context.Context, catalog: Catalog, names: list[str]) -> None:
    if names and ctx.session is not None:
        await discovery_services.learn_from_loads(
            session_id=ctx.session.id,
            endpoint_id=ctx.endpoint.id,
            loaded={n: catalog.entries[n].exposed.item_id for n in names},
        )


def _not_listed(catalog: Catalog, name: str, *, known: bool) -> RpcError:
    if known:
        return RpcError(
            INVALID_PARAMS,
            f"Tool {name} is not loaded in this session: load_tools it first, or use call_tool.",
            {"tool": name},
        )
    return context.unknown("tool", name, [*catalog.entries, *META_NAMES])
