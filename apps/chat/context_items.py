"""Prompts and resources of a conversation's endpoint, as the chat's `/` and `@` menus offer them.

Lists come from the endpoint's view (the catalog, as the gateway lists them); completions,
`prompts/get` and `resources/read` go to the owning backend through the pool with the owner's
spec, as the gateway's do. What a message takes along becomes `Context`: the prompt's messages
(stored as the conversation's own, before the user's) and the resources' content, attached to
the user's message as text the model reads, cut at MCPHUB_CHAT_TOOL_RESULT_CHARS with a note.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from mcp import MCPError

from apps.chat.tools import Toolbox
from apps.connections.default import get_pool
from apps.connections.errors import PoolError
from apps.core.errors import UserError
from apps.toolsets.exposure import EndpointView

MAX_RESOURCES = 10
# Images and other binary content are kept (and shown) up to this size, base64 characters.
MAX_BLOB_CHARS = 2_000_000


class ContextError(UserError):
    """A prompt or resource the chat cannot bring in, with what to do about it."""


@dataclass(frozen=True)
class ContextMessage:
    """A message the context adds to the conversation: what the model reads and what is shown."""

    role: str  # "user" | "assistant"
    text: str
    shown: dict[str, Any]


@dataclass(frozen=True)
class Context:
    prompt: list[ContextMessage] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)  # as shown: uri, text…
    attached_text: str = ""  # appended to the user's message for the model

    def __bool__(self) -> bool:
        return bool(self.prompt or self.attachments)


async def endpoint_view(
    user_id: int, endpoint_id: int | None, *, committed: bool = False
) -> EndpointView:
    view = (await Toolbox.load(user_id, endpoint_id, committed=committed)).view
    if view is None:
        raise ContextError(
            "This conversation has no endpoint: choose one in its settings.", code="no_endpoint"
        )
    return view


def menu(view: EndpointView) -> dict[str, Any]:
    """What `/` and `@` offer: the endpoint's prompts, resources and resource templates."""
    return {
        "prompts": [p.entry for p in view.prompts.values()],
        "resources": view.resources,
        "templates": [
            {**entry, "variables": template_variables(entry["uriTemplate"])}
            for _, entry in view.templates
        ],
    }


def template_variables(template: str) -> list[str]:
    """The variable names of an RFC 6570 URI template (`{a}`, `{+b}`, `{?c,d}`)."""
    names: list[str] = []
    for expression in re.findall(r"\{([^}]*)\}", template):
        for name in expression.lstrip("+#./;?&").split(","):
            name = name.rstrip("*").split(":")[0]
            if name and name not in names:
                names.append(name)
    return names


async def complete(
    view: EndpointView, ref: Any, argument: Any, context: Any = None
) -> dict[str, Any]:
    """`completion/complete` at the backend that owns `ref` (a prompt by its exposed name, or a
    resource template by its URI template)."""
    import mcp_types

    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise ContextError("'complete' needs 'ref' and 'argument' objects.")
    name, value = argument.get("name"), argument.get("value", "")
    if not isinstance(name, str) or not isinstance(value, str):
        raise ContextError("'argument' needs string 'name' and 'value'.")
    if ref.get("type") == "ref/prompt":
        exposed = _prompt(view, ref.get("name"))
        server = exposed.server
        backend_ref: Any = mcp_types.PromptReference(type="ref/prompt", name=exposed.backend_name)
    elif ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
        server = _resource_server(view, ref["uri"])
        backend_ref = mcp_types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
    else:
        raise ContextError("'ref' must be a ref/prompt with a name or a ref/resource with a uri.")
    known = _strings(context, "context")
    result = await _backend(
        lambda: get_pool().complete(
            view.spec(server), backend_ref, {"name": name, "value": value}, known or None
        )
    )
    return result.completion.model_dump(by_alias=True, exclude_none=True, mode="json")


async def get_prompt(view: EndpointView, name: Any, arguments: Any) -> list[ContextMessage]:
    exposed = _prompt(view, name)
    result = await _backend(
        lambda: get_pool().get_prompt(
            view.spec(exposed.server), exposed.backend_name, _strings(arguments, "arguments")
        )
    )
    messages = []
    for message in result.messages:
        content = [_dump(message.content)]  # one block per prompt message
        text = content_text(content, settings.MCPHUB_CHAT_TOOL_RESULT_CHARS)
        shown = {"prompt": exposed.name, "content": _shown(content)}
        messages.append(ContextMessage(message.role, text, shown))
    return messages


async def read_resource(view: EndpointView, uri: Any) -> list[dict[str, Any]]:
    """The resource's contents as JSON (`uri`, `mimeType`, and `text` or `blob`)."""
    if not isinstance(uri, str) or not uri:
        raise ContextError("A resource needs its 'uri'.")
    server = _resource_server(view, uri)
    result = await _backend(lambda: get_pool().read_resource(view.spec(server), uri))
    return [_dump(item) for item in result.contents]


async def gather(view: EndpointView, *, prompt: Any, resources: Any) -> Context:
    """What a message takes along: a prompt's messages (`{"name", "arguments"}`) and resources'
    content (a list of URIs), fetched now; a bad item refuses the whole message."""
    messages = []
    if prompt is not None:
        if not isinstance(prompt, dict):
            raise ContextError("'prompt' must be an object with a 'name' and 'arguments'.")
        messages = await get_prompt(view, prompt.get("name"), prompt.get("arguments") or {})
    uris = resources or []
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise ContextError("'resources' must be a list of URIs.")
    if len(uris) > MAX_RESOURCES:
        raise ContextError(f"Attach at most {MAX_RESOURCES} resources to one message.")
    attachments, texts = [], []
    for uri in dict.fromkeys(uris):
        contents = await read_resource(view, uri)
        text = content_text(
            [{"type": "resource", "resource": c} for c in contents],
            settings.MCPHUB_CHAT_TOOL_RESULT_CHARS,
        )
        texts.append(f'<resource uri="{uri}">\n{text}\n</resource>')
        attachments.append({"uri": uri, "contents": _shown(contents), "chars": len(text)})
    return Context(messages, attachments, "\n\n".join(texts))


def content_text(content: list[dict[str, Any]], limit: int) -> str:
    """MCP content as the model reads it: text whole (cut at `limit` with a note), binary content
    named by its type and size rather than sent as base64."""
    parts = []
    for item in content:
        inner = item.get("resource") if item.get("type") == "resource" else item
        inner = inner if isinstance(inner, dict) else {}
        if isinstance(inner.get("text"), str):
            parts.append(inner["text"])
        elif item.get("type") == "resource_link":
            parts.append(f"[resource link {item.get('uri', '')}: {item.get('name', '')}]")
        else:
            kind = "resource" if item.get("type") == "resource" else item.get("type", "content")
            size = len(inner.get("blob") or inner.get("data") or "") * 3 // 4
            where = f" {inner['uri']}" if inner.get("uri") else ""
            parts.append(f"[{kind}{where} {inner.get('mimeType', '')}, {size} bytes]")
    text = "\n".join(parts)
    if len(text) > limit:
        text = f"{text[:limit]}\n[… cut: {len(text) - limit} more characters not shown]"
    return text


def _shown(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Content as kept for the page: binary data past MAX_BLOB_CHARS dropped, with a note."""
    shown = []
    for item in items:
        for key in ("data", "blob"):
            if len(item.get(key) or "") > MAX_BLOB_CHARS:
                item = {**item, key: "", "note": "too large to keep"}
        if isinstance(item.get("resource"), dict):
            item = {**item, "resource": _shown([item["resource"]])[0]}
        shown.append(item)
    return shown


def _prompt(view: EndpointView, name: Any):
    exposed = view.prompts.get(name) if isinstance(name, str) else None
    if exposed is None:
        raise ContextError(f"Unknown prompt {name!r} on this endpoint.", code="not_found")
    return exposed


def _resource_server(view: EndpointView, uri: str) -> str:
    server = view.resource_server(uri)
    if server is None:
        raise ContextError(f"Unknown resource {uri!r} on this endpoint.", code="not_found")
    return server


def _strings(value: Any, label: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ContextError(f"'{label}' must map names to strings.")
    return value


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def _backend(work: Callable[[], Awaitable[Any]]) -> Any:
    """The backend's answer; its error, or the pool's, as a refusal the user reads."""
    try:
        return await work()
    except MCPError as exc:
        raise ContextError(f"The server refused: {exc.message}", code="backend") from None
    except PoolError as exc:  # CredentialsMissing too: its message says what to fill
        raise ContextError(exc.message, code="backend") from None
