"""The hub as an MCP host: it answers what a backend asks back during a tool call when the caller
cannot — sampling with the calling user's own model, roots from the endpoint's settings, and
(in chat) elicitation answered by the user on the page.

Chat turns and runs have no MCP client to relay to, and most gateway clients (Claude Desktop and
LM Studio, for two) declare no sampling. The endpoint's `sampling` setting decides: `off` refuses,
`ask` shows the request on the chat or run page as an approval (a gateway call asks on the user's
open hub pages, and is refused when none is open), `auto` answers at once. A gateway client that
declares sampling (or roots) keeps its relay: `relay()` only fills in the handlers it lacks.

A chat turn or run lends what its page offers (`lend`): whom to ask, where the tokens are counted,
and its provider and model, taken when the request's model hints match none of the user's. A call
with no turn or run behind it (a gateway client's) asks the user's open hub pages (apps.chat.asks).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from django.contrib.auth import get_user_model
from django.db.models import F
from django.utils import timezone

from apps.chat import asks
from apps.chat.tools import result_text
from apps.connections.hooks import Relay
from apps.core import metrics
from apps.core.errors import UserError
from apps.core.threads import in_thread
from apps.llm import model_traits
from apps.llm.media import ANTHROPIC_IMAGE_TYPES, OPENAI_AUDIO_FORMATS
from apps.llm.selectors import providers_for
from apps.llm.types import (
    Audio,
    Finish,
    Image,
    LLMError,
    Message,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from apps.toolsets.models import Endpoint, SamplingUsage

# The spec's code for a sampling request the user (or the endpoint's setting) refused.
REFUSED = -1
NOT_ASKABLE = (
    "Sampling on this endpoint waits for its owner's approval, and nobody can be asked during this "
    "call (no hub page of theirs took the question, or it was not answered in time): keep a hub "
    "page open, set Sampling to auto on the endpoint's page, or call from a client that answers "
    "sampling."
)
NOBODY_TO_ASK = (
    "The server asks the user something (elicitation), and nobody could be asked: the client does "
    "not answer elicitation, and no hub page of the user took the question or it was not answered "
    "in time. Keep a hub page open, or call from a client that answers elicitation."
)
CALL_ENDED = (
    "The call this question belonged to ended (its timeout, or the client cancelled it) before "
    "the user answered: the question was taken off the user's hub pages."
)
_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse"}


@dataclass(frozen=True)
class Host:
    """What a chat turn or run lends to the sampling requests made during its tool calls."""

    # Shows the request as an approval on the page (with what the user may change: `editable`);
    # True lets the model answer it, a dict of the user's changes (check_edit) answers it edited.
    ask: Callable[..., Awaitable[bool | dict[str, Any]]] | None = None
    # Adds a sampling's tokens to the turn's or run's usage.
    spend: Callable[[Usage], Awaitable[None]] | None = None
    provider_id: int | None = None
    model: str = ""
    # Shows a backend's elicitation (its params as JSON) on the page; the user's {action, content}.
    elicit: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None
    # Shows an event on the page (chat: a card for each sampling, with its request and answer).
    show: Callable[[str, dict[str, Any]], None] | None = None
    # A backend says a URL elicitation is done (`notifications/elicitation/complete`, its
    # elicitationId): the page shows it, and a wait for the user's answer to it ends.
    elicited: Callable[[str], Awaitable[None]] | None = None


_lent: ContextVar[Host | None] = ContextVar("mcphub_host", default=None)


def lend(host: Host) -> None:
    """`host` answers for the rest of the current task and the tasks it starts."""
    _lent.set(host)


@contextmanager
def relay(
    user_id: int, endpoint_id: int | None, caller: Relay | None, server: str = ""
) -> Iterator[Relay | None]:
    """The caller's relay with the hub's answers where it has none, for the length of one call
    (registered in calls.py); `server`: the backend the call goes to (its sampling's tokens are
    counted under it). When the call ends (its timeout, the client's cancel), a question still
    waiting on the user's hub pages is withdrawn: it leaves every page, and the backend is told."""
    if endpoint_id is None:
        yield caller
        return
    caller = caller or Relay()
    asking = _Asking()
    # Read now: the handlers may run on another task (the pool's). No turn or run: the user's pages.
    host = _lent.get() or _pages(user_id, asking)
    try:
        yield dataclasses.replace(
            caller,
            sampling=caller.sampling or _sampler(user_id, endpoint_id, host, server),
            list_roots=caller.list_roots or _roots(endpoint_id),
            elicitation=caller.elicitation or _elicitor(host),
            elicitation_complete=caller.elicitation_complete or _completion(host),
        )
    finally:
        asking.end()


class CallEnded(asks.NotAskable):
    """The question's call ended before anybody answered it."""


class _Asking:
    """The questions one call has on the user's pages (asks.ask), each on its own task: ending the
    call cancels them, and asks.ask's `finally` then takes each off every page (`asks.gone`)."""

    def __init__(self) -> None:
        self.waiting: set[asyncio.Task[Any]] = set()
        self.over = False

    async def ask(self, user_id: int, question: dict[str, Any]) -> dict[str, Any]:
        if self.over:
            raise CallEnded()
        task = asyncio.ensure_future(asks.ask(user_id, question))
        self.waiting.add(task)
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # whoever waits for the answer gave up: so does the page
            task.cancel()
            raise
        finally:
            self.waiting.discard(task)
        if task.cancelled():
            raise CallEnded()
        return task.result()

    def end(self) -> None:
        self.over = True
        for task in self.waiting:
            task.cancel()


def _pages(user_id: int, asking: _Asking) -> Host:
    """Asks the user's open hub pages while the call lasts (NotAskable: none took it, or nobody
    answered in time; CallEnded: the call ended first)."""

    async def approve(request: ToolCall, reason: str, editable: Any = None) -> bool:
        # The pages' panel allows or denies; editing a request is the chat's and run page's.
        question = {"name": request.name, "arguments": request.arguments, "reason": reason}
        return (await asking.ask(user_id, {"kind": "sampling", **question}))["allow"]

    async def elicit(request: dict[str, Any]) -> dict[str, Any]:
        return await asking.ask(user_id, {"kind": "elicitation", **request})

    return Host(ask=approve, elicit=elicit)


def _sampler(user_id: int, endpoint_id: int, host: Host | None, server: str):
    async def sampling(params: types.CreateMessageRequestParams) -> Any:
        try:
            return await sample(user_id, endpoint_id, host, params, server)
        except LLMError as exc:
            return types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"The model provider failed: {exc.message}"
            )

    return sampling


def _elicitor(host: Host | None):
    if host is None or host.elicit is None:
        return None
    ask = host.elicit

    async def elicitation(params: types.ElicitRequestParams) -> types.ElicitResult:
        request = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        request.pop("_meta", None)
        try:
            answer = await ask(request)
        except CallEnded:
            return types.ErrorData(code=types.INVALID_REQUEST, message=CALL_ENDED)
        except asks.NotAskable:
            return types.ErrorData(code=types.INVALID_REQUEST, message=NOBODY_TO_ASK)
        return types.ElicitResult(action=answer["action"], content=answer.get("content"))

    return elicitation


def _completion(host: Host | None):
    if host is None or host.elicited is None:
        return None
    done = host.elicited

    async def elicitation_complete(params: dict[str, Any]) -> None:
        if isinstance(params.get("elicitationId"), str):
            await done(params["elicitationId"])

    return elicitation_complete


def _roots(endpoint_id: int):
    async def list_roots() -> types.ListRootsResult:
        roots = await in_thread(_endpoint_roots)(endpoint_id)
        return types.ListRootsResult(
            roots=[types.Root(uri=r["uri"], name=r.get("name") or None) for r in roots]
        )

    return list_roots


def _endpoint_roots(endpoint_id: int) -> list[dict[str, str]]:
    return Endpoint.objects.filter(pk=endpoint_id).values_list("roots", flat=True).first() or []


async def sample(
    user_id: int,
    endpoint_id: int,
    host: Host | None,
    params: types.CreateMessageRequestParams,
    server: str = "",
) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
    """Answer one `sampling/createMessage` as the endpoint's setting says (shown on the page as a
    card with the request and the answer, where the page has cards). Its tokens count with the
    lending chat turn or run, else (a gateway call) in the sampling usage (user, endpoint, server)."""
    policy, cap = await in_thread(_policy)(endpoint_id)
    request = ToolCall(
        id=f"sampling-{uuid.uuid4().hex[:12]}", name="sampling", arguments=summary(params, cap)
    )
    show = host.show if host is not None else None
    if show is not None:
        show("tool_call", {"id": request.id, "name": request.name, "arguments": request.arguments})
    clock = time.perf_counter()

    async def spend(usage: Usage, model: str) -> None:
        if host is not None and host.spend is not None:
            await host.spend(usage)
        else:
            await in_thread(_count)(user_id, endpoint_id, server, model, usage)

    sent: dict[str, Any] = {}  # the request as the user edited it, when they did
    answer = await _answer(user_id, host, params, policy, cap, request, spend, sent)
    if show is not None:
        failed = isinstance(answer, types.ErrorData)
        blocks = [] if failed else answer.content
        blocks = blocks if isinstance(blocks, list) else [blocks]
        text = answer.message if failed else " ".join(_block_text(b) for b in blocks)
        shown = {
            "id": request.id,
            "name": request.name,
            "isError": failed,
            "content": [{"type": "text", "text": text}],
            "duration_ms": round((time.perf_counter() - clock) * 1000, 1),
        }
        # The card then shows what was sent, not what the backend first asked.
        show("tool_result", {**shown, "arguments": sent} if sent else shown)
    return answer


async def _answer(
    user_id: int,
    host: Host | None,
    params: types.CreateMessageRequestParams,
    policy: str,
    cap: int,
    request: ToolCall,
    spend: Callable[[Usage, str], Awaitable[None]],
    sent: dict[str, Any],
) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
    """The answer to the request; `sent` gets the request as the user edited it, if they did."""
    if policy == Endpoint.Sampling.OFF:
        return types.ErrorData(code=REFUSED, message="Sampling is off on this endpoint.")
    if policy == Endpoint.Sampling.ASK and (host is None or host.ask is None):
        return types.ErrorData(code=REFUSED, message=NOT_ASKABLE)
    candidates = await in_thread(_candidates)(user_id, host)
    choice = _choose(params.model_preferences, candidates)
    if choice is None:
        return types.ErrorData(code=REFUSED, message="The user has no LLM provider to answer with.")
    if policy == Endpoint.Sampling.ASK:
        shown = editable(params, cap, choice, candidates)
        reason = "a server asks your model to write a reply (sampling)"
        while True:
            try:
                decision = await host.ask(request, reason, editable=shown)
            except CallEnded:
                return types.ErrorData(code=REFUSED, message=CALL_ENDED)
            except asks.NotAskable:
                return types.ErrorData(code=REFUSED, message=NOT_ASKABLE)
            if decision is False:
                return types.ErrorData(
                    code=REFUSED, message="The user declined the sampling request."
                )
            if decision is True:
                break
            try:
                params, choice = _edited(params, check_edit(shown, decision), candidates, choice)
                sent.update(summary(params, cap), model=f"{choice[0].name} · {choice[1]}")
                break
            except SamplingEditError as exc:  # shown again, saying what is wrong
                shown = {**editable(params, cap, choice, candidates), "error": exc.message}
    provider, model = choice
    problem = media_problem(provider.kind, params)
    if problem:
        return types.ErrorData(code=types.INVALID_PARAMS, message=problem)
    text, calls, usage, finish = await _complete(provider, model, params, cap)
    await spend(usage, model)
    return _result(params, model, text, calls, finish)


def _count(user_id: int, endpoint_id: int, server: str, model: str, usage: Usage) -> None:
    """A gateway call's sampling: its tokens in the user's sampling usage and in /metrics."""
    SamplingUsage.objects.create(
        user_id=user_id,
        endpoint_id=endpoint_id,
        server_name=server[:40],
        model=model[:200],
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        created_at=timezone.now(),
    )
    metrics.gateway_sampling(server, usage.input_tokens, usage.output_tokens)


def _policy(endpoint_id: int) -> tuple[str, int]:
    row = Endpoint.objects.filter(pk=endpoint_id).values_list("sampling", "sampling_max_tokens")
    return row.first() or (Endpoint.Sampling.OFF, 0)


def summary(params: types.CreateMessageRequestParams, cap: int) -> dict[str, Any]:
    """What the user is shown before allowing a request: its prompt, as text."""
    shown: dict[str, Any] = {}
    if params.system_prompt:
        shown["systemPrompt"] = params.system_prompt
    shown["messages"] = [
        f"{m.role}: " + " ".join(_block_text(b) for b in m.content_as_list) for m in params.messages
    ]
    if params.tools:
        shown["tools"] = [t.name for t in params.tools]
    shown["maxTokens"] = min(params.max_tokens, cap)
    return shown


def _candidates(user_id: int, host: Host | None) -> list[tuple[Any, str]]:
    """The (provider, model) pairs a sampling may use: the lending turn's or run's first, else the
    user's default provider's, then every provider's default model (each pair once)."""
    user = get_user_model().objects.get(pk=user_id)
    # The adapter reads the owner (public_only); the default comes first, as default_provider_for has it.
    providers = list(
        providers_for(user)
        .select_related("owner")
        .order_by("-is_default", F("owner_id").asc(nulls_last=True), "name", "pk")
    )
    lent = None
    if host is not None and host.provider_id is not None:
        lent = next((p for p in providers if p.pk == host.provider_id), None)
    pairs = [(lent, host.model or lent.default_model)] if lent is not None else []
    pairs += [(p, p.default_model) for p in providers]
    seen: set[tuple[int, str]] = set()
    return [(p, m) for p, m in pairs if not ((p.pk, m) in seen or seen.add((p.pk, m)))]


def _choose(preferences: types.ModelPreferences | None, candidates: list[tuple[Any, str]]):
    """The provider and model: the first hint that names (part of) one of the candidates' models
    (providers' default models, the turn's or run's); else, when the request gives numeric
    priorities, the best candidate by its provider's own traits, else the family table
    (apps/llm/model_traits.py; models neither knows are not ranked); else the first candidate (the turn's or run's, else the default)."""
    for hint in (preferences.hints or []) if preferences else []:
        name = (hint.name or "").lower()
        for provider, model in candidates[1:] + candidates[:1]:  # providers' own models first
            if name and name in model.lower():
                return provider, model
    if preferences is not None:
        preferred = model_traits.best(
            ((c, c[1], c[0].model_traits) for c in candidates),
            preferences.cost_priority or 0,
            preferences.speed_priority or 0,
            preferences.intelligence_priority or 0,
        )
        if preferred is not None:
            return preferred
    return candidates[0] if candidates else None


# -- the user's edit of a request, before allowing it (`ask`) ----------------------------------


class SamplingEditError(UserError):
    """The user's changes to a sampling request do not fit it (said to the user; nothing sent)."""


MAX_EDIT_CHARS = 200_000


def _model_value(provider: Any, model: str) -> str:
    return f"{provider.pk}:{model}"


def editable(
    params: types.CreateMessageRequestParams,
    cap: int,
    choice: tuple[Any, str],
    candidates: list[tuple[Any, str]],
) -> dict[str, Any]:
    """What the page lets the user change before allowing the request: each message's text, the
    system prompt, maxTokens (up to the endpoint's cap) and the model among the user's."""
    return {
        "systemPrompt": params.system_prompt or "",
        "messages": [
            {
                "role": m.role,
                "text": "\n".join(
                    b.text for b in m.content_as_list if isinstance(b, types.TextContent)
                ),
            }
            for m in params.messages
        ],
        "maxTokens": max(1, min(params.max_tokens, cap)),
        "maxTokensCap": cap,
        "model": _model_value(*choice),
        "models": [
            {"value": _model_value(p, m), "label": f"{p.name} · {m}"} for p, m in candidates
        ],
    }


def check_edit(shown: dict[str, Any], edit: Any) -> dict[str, Any]:
    """The user's changes, checked against what they were shown (`editable`): SamplingEditError
    naming the first problem. Fields left out keep the request's values."""
    if not isinstance(edit, dict):
        raise SamplingEditError("'edit' must be an object of the request's changed fields.")
    unknown = set(edit) - {"systemPrompt", "messages", "maxTokens", "model"}
    if unknown:
        raise SamplingEditError(f"A sampling request has no field {sorted(unknown)[0]!r} to edit.")
    checked: dict[str, Any] = {}
    if "systemPrompt" in edit:
        prompt = edit["systemPrompt"]
        if not isinstance(prompt, str) or len(prompt) > MAX_EDIT_CHARS:
            raise SamplingEditError(
                f"The system prompt must be text of at most {MAX_EDIT_CHARS} characters."
            )
        checked["systemPrompt"] = prompt
    if "messages" in edit:
        texts, count = edit["messages"], len(shown["messages"])
        if not isinstance(texts, list) or len(texts) != count:
            raise SamplingEditError(f"Send the text of each of the request's {count} messages.")
        for number, text in enumerate(texts, 1):
            if not isinstance(text, str) or len(text) > MAX_EDIT_CHARS:
                raise SamplingEditError(
                    f"Message {number} must be text of at most {MAX_EDIT_CHARS} characters."
                )
        checked["messages"] = texts
    if "maxTokens" in edit:
        cap, wanted = shown["maxTokensCap"], edit["maxTokens"]
        if isinstance(wanted, bool) or not isinstance(wanted, int) or not 1 <= wanted <= cap:
            raise SamplingEditError(
                f"Max tokens must be a whole number from 1 to {cap} (this endpoint's cap)."
            )
        checked["maxTokens"] = wanted
    if "model" in edit:
        if edit["model"] not in {m["value"] for m in shown["models"]}:
            raise SamplingEditError("Pick the model among your providers' models.")
        checked["model"] = edit["model"]
    return checked


def _edited(
    params: types.CreateMessageRequestParams,
    edit: dict[str, Any],
    candidates: list[tuple[Any, str]],
    choice: tuple[Any, str],
) -> tuple[types.CreateMessageRequestParams, tuple[Any, str]]:
    """The request with the user's checked changes, and the model to answer it with. A message's
    new text replaces its text parts; its images, audio and tool parts stay."""
    changes: dict[str, Any] = {}
    if "systemPrompt" in edit:
        changes["system_prompt"] = edit["systemPrompt"] or None
    if "maxTokens" in edit:
        changes["max_tokens"] = edit["maxTokens"]
    if "messages" in edit:
        changes["messages"] = [
            message.model_copy(
                update={
                    "content": ([types.TextContent(type="text", text=text)] if text else [])
                    + [b for b in message.content_as_list if not isinstance(b, types.TextContent)]
                }
            )
            for message, text in zip(params.messages, edit["messages"], strict=True)
        ]
    picked = next((c for c in candidates if _model_value(*c) == edit.get("model")), choice)
    return params.model_copy(update=changes), picked


async def _complete(
    provider: Any, model: str, params: types.CreateMessageRequestParams, cap: int
) -> tuple[str, list[ToolCall], Usage, Finish]:
    from apps.chat.providers import adapter

    tools = _tools(params)
    chunks: list[str] = []
    calls: list[ToolCall] = []
    usage, finish = Usage(0, 0), Finish("stop")
    async for event in adapter(provider).stream(
        model=model,
        messages=messages(params),
        tools=tools,
        max_tokens=max(1, min(params.max_tokens, cap)),
        temperature=params.temperature,
        stop=tuple(params.stop_sequences or ()),
    ):
        if isinstance(event, TextDelta):
            chunks.append(event.text)
        elif isinstance(event, ToolCall):
            calls.append(event)
        elif isinstance(event, Usage):
            usage = event
        elif isinstance(event, Finish):
            finish = event
    return "".join(chunks) or finish.refusal, calls, usage, finish


def _tools(params: types.CreateMessageRequestParams) -> list[ToolSpec]:
    if not params.tools or (params.tool_choice and params.tool_choice.mode == "none"):
        return []
    return [
        ToolSpec(name=t.name, description=t.description or "", input_schema=t.input_schema)
        for t in params.tools
    ]


def media_problem(kind: str, params: types.CreateMessageRequestParams) -> str:
    """Why the provider's API cannot take the request's images or audio ("" when it can): said to
    the backend instead of dropping them. Anthropic's Messages API takes PNG, JPEG, GIF and WebP
    images and no audio; OpenAI's chat completions take images as data URLs and WAV or MP3 audio."""
    for message in params.messages:
        for block in message.content_as_list:
            media = getattr(block, "mime_type", "")
            if (
                isinstance(block, types.ImageContent | types.AudioContent)
                and message.role != "user"
            ):
                return f"The model takes {block.type} only in the user's messages, not the {message.role}'s."
            if isinstance(block, types.AudioContent) and kind == "anthropic":
                return "The user's model (Anthropic's Messages API) takes no audio."
            if isinstance(block, types.AudioContent) and media not in OPENAI_AUDIO_FORMATS:
                return f"The user's model takes WAV or MP3 audio, not {media}."
            if isinstance(block, types.ImageContent) and kind == "anthropic":
                if media not in ANTHROPIC_IMAGE_TYPES:
                    return f"The user's model takes PNG, JPEG, GIF or WebP images, not {media}."
    return ""


def messages(params: types.CreateMessageRequestParams) -> list[Message]:
    """The request's conversation as the adapters take it: tool uses as the assistant's calls,
    tool results as tool messages, images and audio as the user message's media."""
    out = [Message(role="system", text=params.system_prompt)] if params.system_prompt else []
    for message in params.messages:
        blocks = message.content_as_list
        for block in blocks:
            if isinstance(block, types.ToolResultContent):
                out.append(_tool_message(block))
        text = "\n".join(
            _block_text(b)
            for b in blocks
            if not isinstance(b, types.ToolUseContent | types.ToolResultContent | _MEDIA)
        )
        images = tuple(Image(b.mime_type, b.data) for b in blocks if b.type == "image")
        audio = tuple(Audio(b.mime_type, b.data) for b in blocks if b.type == "audio")
        uses = tuple(
            ToolCall(id=b.id, name=b.name, arguments=b.input)
            for b in blocks
            if isinstance(b, types.ToolUseContent)
        )
        if message.role == "assistant" and (text or uses):
            out.append(Message(role="assistant", text=text, tool_calls=uses))
        elif message.role == "user" and (text or images or audio):
            out.append(Message(role="user", text=text, images=images, audio=audio, send_media=True))
    return out


_MEDIA = types.ImageContent | types.AudioContent


def _tool_message(block: types.ToolResultContent) -> Message:
    result = {
        "content": [c.model_dump(by_alias=True, mode="json") for c in block.content],
        "structuredContent": block.structured_content,
    }
    return Message(
        role="tool",
        text=result_text(result, 100_000),
        tool_call_id=block.tool_use_id,
        is_error=bool(block.is_error),
    )


def _block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ToolUseContent):
        return f"[calls {block.name}]"
    if isinstance(block, types.ToolResultContent):
        return "[a tool's result]"
    return f"[{block.type} {getattr(block, 'mime_type', '')}]"


def _result(
    params: types.CreateMessageRequestParams,
    model: str,
    text: str,
    calls: list[ToolCall],
    finish: Finish,
) -> types.CreateMessageResult | types.CreateMessageResultWithTools:
    stop = "toolUse" if calls else _STOP_REASONS.get(finish.reason, finish.reason)
    reply = types.TextContent(type="text", text=text)
    if not params.tools:
        return types.CreateMessageResult(
            role="assistant", content=reply, model=model, stop_reason=stop
        )
    uses = [types.ToolUseContent(id=c.id, name=c.name, input=c.arguments) for c in calls]
    return types.CreateMessageResultWithTools(
        role="assistant",
        content=([reply] if text else []) + uses or [reply],
        model=model,
        stop_reason=stop,
    )
