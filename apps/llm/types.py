"""Provider-neutral values that flow between the hub and any LLM adapter (no Django imports)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ToolSpec:
    """One tool offered to the model (exposed name, exactly as the endpoint lists it)."""

    name: str
    description: str
    input_schema: dict


@dataclass(frozen=True)
class ToolCall:
    """A whole tool call assembled from deltas; also an event of `Adapter.stream()`."""

    id: str
    name: str
    arguments: dict  # parsed JSON object; {} when the model sent none
    arguments_error: str | None = None  # set (and arguments={}) when the model's JSON was invalid
    # Opaque fields the provider attached to the call (Gemini 3's `extra_content` with its
    # thought_signature), sent back on this call unchanged and never shown.
    replay: dict[str, Any] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Image:
    """A picture given to the model with a message (base64 `data`), by providers that take them."""

    mime_type: str
    data: str


@dataclass(frozen=True)
class Audio:
    """A sound given to the model with a message (base64 `data`), by providers that take it."""

    mime_type: str
    data: str


@dataclass(frozen=True)
class Message:
    """One entry of the conversation history given to `Adapter.stream()`."""

    role: Literal["system", "user", "assistant", "tool"]
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()  # assistant messages that called tools
    tool_call_id: str | None = None  # tool messages: which call this answers
    is_error: bool = False  # tool messages: the result is an error
    reasoning: str = ""  # assistant messages: the model's reasoning as shown to the user
    # Assistant messages: opaque provider fields sent back unchanged where the provider requires
    # them (DeepSeek's `reasoning_content`, OpenRouter's `reasoning_details`, Anthropic's signed
    # thinking blocks); never shown.
    replay: dict[str, Any] | None = field(default=None, compare=False)
    # User messages: pictures from a prompt or an attached resource; `text` names them too, for
    # providers that take none.
    images: tuple[Image, ...] = field(default=(), compare=False)
    audio: tuple[Audio, ...] = field(default=(), compare=False)
    # User messages: the images and audio go to OpenAI-compatible servers too (a backend's sampling
    # request holds them: a model that cannot take them says so, rather than their being dropped).
    send_media: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning (thinking), streamed before or between its answer."""

    text: str


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Finish:
    """The last event: why the reply ended, and what of it must go back to the provider."""

    reason: str  # "stop" | "tool_calls" | "length" | "refusal" | "content_filter" | other provider reason
    refusal: str = ""  # the model's refusal message (OpenAI `refusal`), shown marked as one
    replay: dict[str, Any] | None = field(
        default=None, compare=False
    )  # becomes the message's `replay`


Event = TextDelta | ReasoningDelta | ToolCall | Usage | Finish

ERROR_KINDS = ("auth", "quota", "rate_limit", "model", "unavailable", "bad_request", "other")


class LLMError(Exception):
    """One clear, user-presentable message.

    `kind`: auth | quota | rate_limit | model | unavailable | bad_request | other; `status` is the
    provider's HTTP status when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "other",
        status: int | None = None,
        received_chars: int = 0,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind if kind in ERROR_KINDS else "other"
        self.status = status
        # A reply that broke off mid-stream: how many characters of its text had arrived (and been
        # shown) before it did.
        self.received_chars = received_chars

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ProviderStatus:
    """Not part of the reply: why it has not started yet (a local server loading its model, or
    busy), said while the adapter waits to ask again; as many as there are waits, before any other event."""

    message: str


# Kept apart from the reply's own events above: a status says nothing about the reply.
Event = Event | ProviderStatus
