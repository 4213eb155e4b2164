"""The scripted LLM: the one stand-in of the test suite (DESIGN.md §8).

A real HTTP server on a free port that answers like OpenAI's Chat Completions API
(`POST /v1/chat/completions`, `GET /v1/models`) and Anthropic's Messages API (`POST /v1/messages`,
`GET /v1/models` when the request carries `anthropic-version`), streaming exactly as those services
do: OpenAI's `data: {chunk}` lines ending in `data: [DONE]` (with a usage chunk when the request
asks for `stream_options.include_usage`), Anthropic's named events message_start / ping /
content_block_start / content_block_delta / content_block_stop / message_delta / message_stop.
Errors come in each provider's JSON error shape. Hub child processes reach it through `.url`.

    with ScriptedLLM() as server:
        server.script([Reply(text=["Hel", "lo"]), Reply(error=429, retry_after=0)])
        ... OpenAI base URL: server.url ("http://127.0.0.1:PORT/v1"); Anthropic: server.url too
        (the adapter strips /v1) or server.base ...
        server.requests      # the JSON bodies of the model requests, in order
        server.disconnects   # clients that went away mid-reply (stop / cancel tests)

Script entries are consumed one per model request, in order; when the script is empty the
`responder` (a function of the request body) answers, else a 500 says the script ran out.

`ScriptedLLM(flavour=...)` gives the Chat Completions side one OpenAI-compatible server's habits
(FLAVOURS; "openai" is api.openai.com's): `gemini` (errors as a JSON list, index-less tool-call
deltas continuing a call, "stop" after tool calls), `tgi` (arguments as a JSON object), `ollama`
(whole calls without index, 503 "server busy", its own API at /api/tags and plain-text 404s beside
/v1), `vllm` (interleaved indices, top-level error `message`), `lmstudio` (empty call ids, errors as
a string), `llamacpp` (1–3 character fragments, events split mid-UTF-8, 503 "Loading model"),
`nostream` (refuses `stream: true` as o1 did), `json-only` (answers a stream request with one JSON
completion).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import hmac
import json
import select
import socket
import struct
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import zip_longest
from typing import Any

DEFAULT_MODELS = ("scripted-model", "scripted-large")


@dataclass(frozen=True)
class Reply:
    """One scripted answer to one model request.

    text: streamed in exactly these chunks. tool_calls: (id, name, arguments) — arguments a dict, or a
    str sent verbatim (invalid JSON tests); streamed in `args_chunk`-character fragments.
    error: an HTTP status answered in the provider's error format (`error_code` picks the OpenAI
    code / Anthropic error type, e.g. "insufficient_quota"); retry_after sets that header.
    delay: seconds before the response starts; chunk_delay: between chunks.
    finish: the finish reason in neutral words (stop, tool_calls, length, content_filter).
    drop: reset the connection without answering; cut_after: reset it after this many chunks.
    error_after: after this many chunks, an error inside the 200 stream, as the services send one
    (Anthropic: `event: error` with e.g. overloaded_error; OpenAI: `data: {"error": ...}`); its
    status picks the type (`error`, default 529 Anthropic / 500 OpenAI).

    Reasoning models and cut replies (each as its product documents it):
    reasoning: thinking streamed before the text — OpenAI wire as `reasoning_format` says
    ("reasoning_content": DeepSeek/Kimi; "openrouter": `reasoning` + `reasoning_details` with a
    signature), Anthropic wire as a signed `thinking` block (only when the request enables thinking).
    redacted_thinking: Anthropic, a `redacted_thinking` block after it. thought_signatures: Gemini 3
    (OpenAI-compatible endpoint), the first call carries `extra_content.google.thought_signature`.
    refusal: OpenAI's `delta.refusal` pieces (content null, finish "stop"); for Anthropic's refusal
    use finish="content_filter". tokens: the reply's length in tokens — a request whose max_tokens
    (max_completion_tokens) is smaller gets it cut there with finish "length".
    require: checks the product makes of the request, answered with its 400 when they fail:
    "reasoning_content" (DeepSeek: every assistant tool-call message carries it, in every later
    request), "thought_signature" (Gemini 3: the first call of each assistant step of the current turn
    carries a signature it issued), "reasoning_details" (OpenRouter relaying Anthropic: the details
    come back with their signature), "thinking" (Anthropic with thinking enabled: the last
    assistant message starts with its thinking blocks, signatures intact).
    """

    text: Sequence[str] = ()
    tool_calls: Sequence[tuple[str, str, dict | str]] = ()
    error: int | None = None
    error_message: str | None = None
    error_code: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    finish: str | None = None
    usage: tuple[int, int] | None = None
    args_chunk: int = 5
    drop: bool = False
    cut_after: int | None = None
    error_after: int | None = None
    # The flavours' failures (ScriptedLLM(flavour=...)): `loading` answers the flavour's cold-start
    # error instead (llama.cpp's 503 "Loading model", LM Studio's "Model is loading", Ollama's 503
    # "server busy"); `close_after`: the stream is sent with the whole body's Content-Length and the
    # connection closed cleanly after this many chunks (a proxy cutting a reply short).
    loading: bool = False
    close_after: int | None = None
    reasoning: Sequence[str] = ()
    reasoning_format: str = "reasoning_content"
    redacted_thinking: bool = False
    thought_signatures: bool = False
    refusal: Sequence[str] = ()
    tokens: int | None = None
    require: Sequence[str] = ()

    def arguments(self, index: int) -> str:
        raw = self.tool_calls[index][2]
        return raw if isinstance(raw, str) else json.dumps(raw)

    def fragments(self, index: int) -> list[str]:
        raw, size = self.arguments(index), max(1, self.args_chunk)
        return [raw[i : i + size] for i in range(0, len(raw), size)]

    @property
    def finish_reason(self) -> str:
        return self.finish or ("tool_calls" if self.tool_calls else "stop")

    def limited(self, body: dict) -> Reply:
        """The reply as a request's output limit leaves it: cut there (finish "length") when `tokens` exceed it."""
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        if self.tokens is None or not limit or limit >= self.tokens:
            return self
        text = "".join(self.text)
        kept = text[: max(1, len(text) * limit // self.tokens)]
        return dataclasses.replace(
            self, text=[kept], tool_calls=(), finish="length", usage=(1, limit)
        )


# Signatures the scripted models issue: opaque to the hub, checkable here (an HMAC of what they sign).
_SIGNING_KEY = b"scripted-llm-signing-key"


def signature(text: str) -> str:
    return base64.b64encode(hmac.new(_SIGNING_KEY, text.encode(), hashlib.sha256).digest()).decode()


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None


class ClientGone(Exception):
    """The client closed the connection while we were answering."""


class ScriptedLLM:
    """A threaded HTTP server speaking OpenAI's and Anthropic's wire formats, answering from a script.

    `models`: what GET /v1/models lists; when given, a request for another model gets the
    provider's 404 "model not found" (None: any model is accepted). `api_key`: when set, a request
    without it (Bearer or x-api-key) gets the provider's 401. `flavour`: which OpenAI-compatible
    server's habits the Chat Completions side has (FLAVOURS).
    """

    def __init__(
        self,
        *,
        models: Sequence[str] | None = None,
        api_key: str | None = None,
        flavour: str = "openai",
    ) -> None:
        if flavour not in FLAVOURS:
            raise ValueError(f"unknown flavour {flavour!r}; known: {', '.join(FLAVOURS)}")
        self.models = list(models) if models is not None else None
        self.api_key = api_key
        self.flavour = flavour
        self.responder: Callable[[dict], Reply] | None = None
        self.requests: list[dict] = []
        self.received: list[Received] = []
        self.disconnects = 0
        self.unscripted = 0
        self.active = 0  # replies being answered right now
        # Anthropic's GET /v1/models/{id} says each model's output limit (`max_tokens`); unlisted: 404.
        self.output_limits: dict[str, int] = {}
        self._script: list[Reply] = []
        self._lock = threading.Condition()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.llm = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    # --- lifecycle
    def start(self) -> ScriptedLLM:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def down(self) -> None:
        """The server goes away until `up()`, keeping its port and script: new connections are
        refused, and the open ones (kept alive by clients, or mid-reply) are cut, as a stopped
        server's would be."""
        self.stop()
        for sock in list(self._httpd.open_sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def up(self) -> None:
        """Back on the same port, as a restarted LLM server comes back."""
        port = self.port
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.llm = self  # type: ignore[attr-defined]
        self.start()

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/v1"

    # --- scripting
    def script(self, replies: Iterable[Reply]) -> None:
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def next_reply(self, body: dict) -> Reply:
        with self._lock:
            if self._script:
                return self._script.pop(0)
            self.unscripted += 1
        if self.responder is not None:
            return self.responder(body)
        return Reply(
            error=500, error_message="ScriptedLLM: the test scripted no reply for this request"
        )

    def record(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)
            if received.method == "POST":
                self.requests.append(received.body)

    def answering(self, delta: int) -> None:
        with self._lock:
            self.active += delta

    def client_gone(self) -> None:
        with self._lock:
            self.disconnects += 1
            self._lock.notify_all()

    def wait_for_disconnects(self, count: int = 1, timeout: float = 5.0) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: self.disconnects >= count, timeout)


# --- wire formats -------------------------------------------------------------------------------

_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: (
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
    ),
    403: (
        "invalid_request_error",
        "unsupported_country_region_territory",
        "Country, region, or territory not supported",
    ),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
    429: (
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for requests. Please try again in 20ms.",
    ),
    500: (
        "server_error",
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
    503: ("server_error", None, "The engine is currently overloaded, please try again later"),
}
_OPENAI_CODES = {
    "insufficient_quota": (
        "insufficient_quota",
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
    )
}
_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: (
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}
_ANTHROPIC_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def openai_error(status: int, *, message: str | None = None, code: str | None = None) -> dict:
    kind, default_code, default_message = _OPENAI_CODES.get(code or "") or _OPENAI_ERRORS.get(
        status,
        ("server_error" if status >= 500 else "invalid_request_error", None, f"HTTP {status}"),
    )
    return {
        "error": {
            "message": message or default_message,
            "type": kind,
            "param": None,
            "code": code or default_code,
        }
    }


def anthropic_error(status: int, *, message: str | None = None, code: str | None = None) -> dict:
    kind, default_message = _ANTHROPIC_ERRORS.get(status, ("api_error", f"HTTP {status}"))
    return {
        "type": "error",
        "error": {"type": code or kind, "message": message or default_message},
        "request_id": f"req_{uuid.uuid4().hex[:24]}",
    }


def _input_tokens(body: dict) -> int:
    # Deterministic stand-in for a tokenizer: ~4 characters per token.
    return max(1, len(json.dumps(body.get("messages", []))) // 4)


def _output_tokens(reply: Reply) -> int:
    return len(reply.text) + sum(len(reply.fragments(i)) + 1 for i in range(len(reply.tool_calls)))


def openai_chunks(reply: Reply, body: dict, flavour: str = "openai") -> Iterator[dict]:
    """Chat Completions stream chunks, as api.openai.com sends them (tool calls: as `flavour` does)."""
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "system_fingerprint": "fp_scripted",
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        out = {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return {**out, "usage": None} if include_usage else out

    yield chunk({"role": "assistant", "content": "" if reply.text else None, "refusal": None})
    yield from (chunk(delta) for delta in _openai_reasoning(reply))
    for piece in reply.refusal:
        yield chunk({"content": None, "refusal": piece})
    for piece in reply.text:
        yield chunk({"content": piece})
    for delta in tool_call_deltas(reply, flavour):
        yield chunk({"tool_calls": delta})
    # Gemini streams "stop" after tool calls (its non-streaming answer says "tool_calls").
    yield chunk(
        {},
        "stop"
        if flavour == "gemini" and reply.finish_reason == "tool_calls"
        else reply.finish_reason,
    )
    if include_usage:
        prompt, completion = reply.usage or (_input_tokens(body), _output_tokens(reply))
        yield {
            **base,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _openai_reasoning(reply: Reply) -> Iterator[dict]:
    if reply.reasoning_format == "openrouter":
        for piece in reply.reasoning:
            yield {
                "content": "",
                "reasoning": piece,
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "text": piece,
                        "format": "anthropic-claude-v1",
                        "index": 0,
                    }
                ],
            }
        if reply.reasoning:
            yield {
                "content": "",
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "signature": signature("".join(reply.reasoning)),
                        "format": "anthropic-claude-v1",
                        "index": 0,
                    }
                ],
            }
        return
    for piece in reply.reasoning:
        yield {"content": None, "reasoning_content": piece}


def openai_completion(reply: Reply, body: dict, flavour: str = "openai") -> dict:
    prompt, completion = reply.usage or (_input_tokens(body), _output_tokens(reply))
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(reply.text) or None,
        "refusal": None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": json.loads(reply.arguments(i))
                    if flavour == "tgi"
                    else reply.arguments(i),
                },
            }
            for i, (call_id, name, _) in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "system_fingerprint": "fp_scripted",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


# --- flavours: OpenAI-compatible servers' own habits, as their docs and their users' reports show --

FLAVOURS = (
    "openai",
    "gemini",
    "tgi",
    "ollama",
    "vllm",
    "lmstudio",
    "llamacpp",
    "nostream",
    "json-only",
)


def tool_call_deltas(reply: Reply, flavour: str) -> Iterator[list[dict]]:
    """The `delta.tool_calls` lists a flavour streams a reply's calls in."""
    calls = list(enumerate(reply.tool_calls))
    if flavour == "gemini":
        # Gemini's OpenAI compatibility: no `index` anywhere; a metadata-only delta (the thought
        # signature), then each call's id and name with the first part of its arguments, then the rest.
        if calls:
            yield [{"extra_content": {"google": {"thought_signature": "c2lnbmF0dXJl"}}}]
        for index, (call_id, name, _) in calls:
            raw = reply.arguments(index)
            half = len(raw) // 2
            yield [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": raw[:half]},
                }
            ]
            yield [{"function": {"arguments": raw[half:]}}]
    elif flavour == "ollama":
        # Ollama: every call whole, in one delta, without `index`.
        if calls:
            yield [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": reply.arguments(index)},
                }
                for index, (call_id, name, _) in calls
            ]
    elif flavour == "tgi":
        # Hugging Face TGI (and a llama-server release): the arguments as a JSON object, not a string.
        for index, (call_id, name, _) in calls:
            yield [
                {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.loads(reply.arguments(index))},
                }
            ]
    elif flavour == "vllm":
        # vLLM with parallel calls: every call opened, then their fragments interleaved by index.
        for index, (call_id, name, _) in calls:
            yield [
                {
                    "index": index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
            ]
        pieces = [[(index, f) for f in reply.fragments(index)] for index, _ in calls]
        for row in zip_longest(*pieces):
            for index, fragment in filter(None, row):
                yield [{"index": index, "function": {"arguments": fragment}}]
    else:
        for index, (call_id, name, _) in calls:
            # LM Studio sends an empty id; llama.cpp's fragments are 1–3 characters.
            head = {
                "index": index,
                "id": "" if flavour == "lmstudio" else call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            if (
                reply.thought_signatures and index == 0
            ):  # Gemini 3 signs the first call of a step only
                head["extra_content"] = {
                    "google": {"thought_signature": signature(f"{call_id}:{name}")}
                }
            yield [head]
            for fragment in (
                _small_pieces(reply.arguments(index))
                if flavour == "llamacpp"
                else reply.fragments(index)
            ):
                yield [{"index": index, "function": {"arguments": fragment}}]


def _small_pieces(raw: str) -> list[str]:
    pieces, at, size = [], 0, 1
    while at < len(raw):
        pieces.append(raw[at : at + size])
        at, size = at + size, size % 3 + 1
    return pieces


# Google's canonical status names of the HTTP codes its APIs answer with.
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
# What each flavour says while its model loads or its queue is full.
_LOADING = {
    "llamacpp": (503, "Loading model"),
    "lmstudio": (503, "Model is loading. Please try again in a moment."),
    "ollama": (503, "server busy, please try again.  maximum pending requests exceeded"),
}


def flavour_error(
    flavour: str,
    status: int,
    *,
    message: str | None = None,
    code: str | None = None,
    retry_after: float | None = None,
) -> Any:
    """An error body in the flavour's shape (OpenAI's for the others)."""
    said = message or openai_error(status, code=code)["error"]["message"]
    if flavour == "gemini":
        error: dict[str, Any] = {
            "code": status,
            "message": said,
            "status": _GOOGLE_STATUS.get(status, "UNKNOWN"),
        }
        if status == 429 and code == "daily_quota":
            error["message"] = message or (
                "You exceeded your current quota, please check your plan and billing "
                "details. For more information on this error, head to: "
                "https://ai.google.dev/gemini-api/docs/rate-limits."
            )
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [
                        {
                            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                        }
                    ],
                }
            ]
        elif status == 429:
            error["message"] = message or "Resource has been exhausted (e.g. check quota)."
            if retry_after is not None:
                error["details"] = [
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{retry_after:g}s",
                    }
                ]
        return [{"error": error}]
    if flavour == "vllm":
        return {
            "object": "error",
            "message": said,
            "type": "BadRequestError" if status < 500 else "InternalServerError",
            "param": None,
            "code": status,
        }
    if flavour == "ollama":
        return {
            "error": {
                "message": said,
                "type": "invalid_request_error" if status == 400 else "api_error",
                "param": None,
                "code": None,
            }
        }
    if flavour == "lmstudio":
        return {"error": said}
    if flavour == "tgi":
        return {"error": said, "error_type": "overloaded" if status == 429 else "generation"}
    if flavour == "llamacpp":
        kind = {503: "unavailable_error", 401: "authentication_error", 404: "not_found_error"}.get(
            status, "server_error"
        )
        return {
            "error": {
                "code": status,
                "message": said,
                "type": kind if status != 400 else "invalid_request_error",
            }
        }
    return openai_error(status, message=message, code=code)


# OpenAI's o1 at launch, asked to stream: the refusal a server that cannot stream gives.
NO_STREAMING = {
    "error": {
        "message": "Unsupported value: 'stream' does not support true with this model. Only the default (false) value is supported.",
        "type": "invalid_request_error",
        "param": "stream",
        "code": "unsupported_value",
    }
}


def anthropic_events(reply: Reply, body: dict) -> Iterator[tuple[str, dict]]:
    """Messages API stream events, as api.anthropic.com sends them."""
    prompt, completion = reply.usage or (_input_tokens(body), _output_tokens(reply))
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:24]}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", ""),
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": prompt, "output_tokens": 1},
            },
        },
    )
    yield "ping", {"type": "ping"}
    index = 0
    for block in _anthropic_thinking(reply, body):
        if block["type"] == "redacted_thinking":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        else:
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
            for piece in reply.reasoning:
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    },
                )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    if reply.text:
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
        for piece in reply.text:
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    for number, (call_id, name, _) in enumerate(reply.tool_calls):
        yield (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            },
        )
        for fragment in [""] + reply.fragments(number):
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": fragment},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    reason = _ANTHROPIC_REASONS.get(reply.finish_reason, reply.finish_reason)
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": completion},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _anthropic_thinking(reply: Reply, body: dict) -> list[dict]:
    """The thinking blocks of a reply: only when the request turned thinking on, as the API does."""
    if not reply.reasoning or (body.get("thinking") or {}).get("type") != "enabled":
        return []
    thought = "".join(reply.reasoning)
    blocks = [{"type": "thinking", "thinking": thought, "signature": signature(thought)}]
    if reply.redacted_thinking:
        data = base64.b64encode(b"encrypted:" + thought.encode()).decode()
        blocks.append({"type": "redacted_thinking", "data": data})
    return blocks


def anthropic_message(reply: Reply, body: dict) -> dict:
    prompt, completion = reply.usage or (_input_tokens(body), _output_tokens(reply))
    content: list[dict] = _anthropic_thinking(reply, body)
    content += [{"type": "text", "text": "".join(reply.text)}] if reply.text else []
    content += [
        {
            "type": "tool_use",
            "id": call_id,
            "name": name,
            "input": json.loads(reply.arguments(i) or "{}"),
        }
        for i, (call_id, name, _) in enumerate(reply.tool_calls)
    ]
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": _ANTHROPIC_REASONS.get(reply.finish_reason, reply.finish_reason),
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


# --- what products check of a request -----------------------------------------------------------


def _current_turn(messages: list) -> list[tuple[int, dict]]:
    """(index, message) of the assistant messages after the last user message."""
    last_user = max(
        (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"),
        default=-1,
    )
    return [
        (i, m)
        for i, m in enumerate(messages)
        if i > last_user and isinstance(m, dict) and m.get("role") == "assistant"
    ]


def _deepseek_check(body: dict) -> tuple[int, Any] | None:
    # "For turns that do perform tool calls, the reasoning_content must be fully passed back to the
    # API in all subsequent requests" (DeepSeek's thinking-mode guide): earlier turns too.
    for index, message in enumerate(body.get("messages") or []):
        if (
            message.get("role") == "assistant"
            and message.get("tool_calls")
            and not isinstance(message.get("reasoning_content"), str)
        ):
            return 400, {
                "error": {
                    "message": f"Missing `reasoning_content` field in the assistant message at message index {index}. For more "
                    "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_request_error",
                }
            }
    return None


def _gemini_check(body: dict) -> tuple[int, Any] | None:
    for index, message in _current_turn(body.get("messages") or []):
        calls = message.get("tool_calls") or []
        if not calls:
            continue
        first = calls[0]
        name = (first.get("function") or {}).get("name")
        sent = ((first.get("extra_content") or {}).get("google") or {}).get("thought_signature")
        if sent != signature(f"{first.get('id')}:{name}"):
            # Gemini answers errors as a JSON list of error objects.
            return 400, [
                {
                    "error": {
                        "code": 400,
                        "status": "INVALID_ARGUMENT",
                        "message": (
                            "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
                            "correctly, and missing thought_signature may lead to degraded model performance. Additional data, "
                            f"function call `default_api:{name}` , position {index + 1}. Please refer to "
                            "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
                        ),
                    }
                }
            ]
    return None


def _openrouter_check(body: dict) -> tuple[int, Any] | None:
    for index, message in _current_turn(body.get("messages") or []):
        details = message.get("reasoning_details") or []
        text = "".join(d.get("text") or "" for d in details if isinstance(d, dict))
        signed = [d.get("signature") for d in details if isinstance(d, dict) and d.get("signature")]
        if message.get("tool_calls") and signed != [signature(text)]:
            raw = (
                f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. "
                "When `thinking` is enabled, a final `assistant` message must start with a thinking block."
            )
            return 400, {
                "error": {
                    "message": "Provider returned error",
                    "code": 400,
                    "metadata": {"raw": raw, "provider_name": "Anthropic"},
                }
            }
    return None


def _anthropic_check(body: dict) -> tuple[int, Any] | None:
    thinking = body.get("thinking") or {}
    if thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024 or budget >= (body.get("max_tokens") or 0):
        return 400, anthropic_error(
            400, message="thinking.budget_tokens: must be at least 1024 and less than max_tokens"
        )
    messages = body.get("messages") or []
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    if last is None or not isinstance(messages[last].get("content"), list):
        return None
    blocks = messages[last]["content"]
    if any(b.get("type") == "tool_use" for b in blocks) and blocks[0].get("type") not in (
        "thinking",
        "redacted_thinking",
    ):
        return 400, anthropic_error(
            400,
            message=(
                f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{blocks[0].get('type')}`. "
                "When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
                "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous "
                "turns. To avoid this requirement, disable `thinking`."
            ),
        )
    for number, block in enumerate(blocks):
        if block.get("type") == "thinking" and block.get("signature") != signature(
            block.get("thinking") or ""
        ):
            return 400, anthropic_error(
                400,
                message=f"messages.{last}.content.{number}: Invalid `signature` in `thinking` block",
            )
    return None


_OPENAI_PARTS = {"text": "text", "image_url": "image_url", "input_audio": "input_audio"}
_ANTHROPIC_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _content_parts_check(anthropic: bool, body: dict) -> tuple[int, Any] | None:
    """Content parts as each API takes them, refused as it refuses them: OpenAI's user `text`,
    `image_url` (a URL or data URL) and `input_audio` (`wav` or `mp3`); Anthropic's base64 `image`
    blocks of its four types (it has no audio block)."""
    for index, message in enumerate(body.get("messages") or []):
        parts = message.get("content") if isinstance(message, dict) else None
        for number, part in enumerate(parts if isinstance(parts, list) else []):
            kind = part.get("type") if isinstance(part, dict) else None
            where = f"messages.{index}.content.{number}"
            if anthropic:
                source = (part.get("source") or {}) if kind == "image" else {}
                if kind == "image" and (
                    source.get("type") != "base64"
                    or source.get("media_type") not in _ANTHROPIC_IMAGES
                    or not source.get("data")
                ):
                    return 400, anthropic_error(400, message=f"{where}.image.source: invalid")
                if kind not in (
                    "text",
                    "image",
                    "tool_use",
                    "tool_result",
                    "thinking",
                    "redacted_thinking",
                ):
                    return 400, anthropic_error(400, message=f"{where}.type: unknown `{kind}`")
                continue
            bad = kind not in _OPENAI_PARTS
            if kind == "image_url":
                url = (part.get("image_url") or {}).get("url") or ""
                bad = not url.startswith(("data:image/", "http://", "https://"))
            elif kind == "input_audio":
                audio = part.get("input_audio") or {}
                bad = audio.get("format") not in ("wav", "mp3") or not audio.get("data")
            if bad:
                return 400, flavour_error(
                    "openai", 400, message=f"Invalid content part at '{where}' ({kind})."
                )
    return None


CHECKS: dict[str, Callable[[dict], tuple[int, Any] | None]] = {
    "reasoning_content": _deepseek_check,
    "thought_signature": _gemini_check,
    "reasoning_details": _openrouter_check,
    "thinking": _anthropic_check,
}


# --- HTTP ---------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 drops connection bursts (100 conversations at once) into SYN retries.
    request_queue_size = 512

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open_sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        self.open_sockets.add(sock)  # so that `down()` can cut the connections clients keep open
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up is what the cancel tests do on purpose: no traceback for it.
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, ClientGone)):
            super().handle_error(request, client_address)


def _openai_bad_url(method: str, path: str) -> dict:
    return {
        "error": {
            "message": f"Invalid URL ({method} {path})",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def _anthropic_bad_url(method: str, path: str) -> dict:
    return anthropic_error(404, message="Not Found")


@dataclass
class _Format:
    error: Callable[..., dict]
    bad_url: Callable[[str, str], dict]
    stream: Callable[[Reply, dict], Iterator[bytes]]
    whole: Callable[[Reply, dict], dict]
    models: Callable[[list[str]], dict]
    request_id_header: str = "x-request-id"


def _openai_sse(reply: Reply, body: dict, flavour: str = "openai") -> Iterator[bytes]:
    for number, chunk in enumerate(openai_chunks(reply, body, flavour)):
        if number == reply.error_after:
            error = openai_error(
                reply.error or 500, message=reply.error_message, code=reply.error_code
            )
            yield f"data: {json.dumps(error)}\n\n".encode()
            return
        yield f"data: {json.dumps(chunk)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _anthropic_sse(reply: Reply, body: dict) -> Iterator[bytes]:
    for number, (name, data) in enumerate(anthropic_events(reply, body)):
        if number == reply.error_after:
            error = anthropic_error(
                reply.error or 529, message=reply.error_message, code=reply.error_code
            )
            yield f"event: error\ndata: {json.dumps(error)}\n\n".encode()
            return
        yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


OPENAI = _Format(
    error=openai_error,
    bad_url=_openai_bad_url,
    stream=_openai_sse,
    whole=openai_completion,
    models=lambda ids: {
        "object": "list",
        "data": [
            {"id": i, "object": "model", "created": 1700000000, "owned_by": "scripted"} for i in ids
        ],
    },
)
ANTHROPIC = _Format(
    error=anthropic_error,
    bad_url=_anthropic_bad_url,
    stream=_anthropic_sse,
    whole=anthropic_message,
    request_id_header="request-id",
    models=lambda ids: {
        "data": [
            {"type": "model", "id": i, "display_name": i, "created_at": "2025-01-01T00:00:00Z"}
            for i in ids
        ],
        "has_more": False,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    },
)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedLLM/1"
    # Each chunk leaves at once, as from a real streaming server (Nagle + delayed ACK held them ~40 ms).
    disable_nagle_algorithm = True

    @property
    def llm(self) -> ScriptedLLM:
        return self.server.llm  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def _format(self) -> _Format:
        is_anthropic = self.path.startswith("/v1/messages") or "anthropic-version" in self.headers
        return ANTHROPIC if is_anthropic else OPENAI

    def do_GET(self) -> None:
        self.llm.record(Received("GET", self.path, dict(self.headers)))
        fmt = self._format()
        path = self.path.split("?")[0].rstrip("/")
        if self.llm.flavour == "ollama" and path == "/api/tags":  # Ollama's own API, beside /v1
            return self._json(
                200,
                {
                    "models": [
                        {"name": m, "model": m, "size": 1, "digest": "0" * 64}
                        for m in self.llm.models or DEFAULT_MODELS
                    ]
                },
            )
        model = path.removeprefix("/v1/models/")
        if fmt is ANTHROPIC and model in self.llm.output_limits and self._authorized(fmt):
            return self._json(
                200,
                {
                    "type": "model",
                    "id": model,
                    "display_name": model,
                    "created_at": "2025-01-01T00:00:00Z",
                    "max_input_tokens": 200000,
                    "max_tokens": self.llm.output_limits[model],
                },
            )
        if path != "/v1/models":
            return self._not_found(fmt, "GET")
        if self._authorized(fmt):
            self._json(200, fmt.models(list(self.llm.models or DEFAULT_MODELS)))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            body = None
        self.llm.record(Received("POST", self.path, dict(self.headers), body))
        path = self.path.split("?")[0].rstrip("/")
        fmt = ANTHROPIC if path == "/v1/messages" else OPENAI
        if path not in ("/v1/chat/completions", "/v1/messages"):
            return self._not_found(fmt, "POST")
        if not isinstance(body, dict):
            return self._json(
                400, self._error(fmt, 400, message="The request body is not a JSON object.")
            )
        if not self._authorized(fmt):
            return
        model = body.get("model")
        if self.llm.models is not None and model not in self.llm.models:
            message = (
                f"The model `{model}` does not exist or you do not have access to it."
                if fmt is OPENAI
                else f"model: {model}"
            )
            return self._json(404, self._error(fmt, 404, message=message))
        if fmt is OPENAI and self.llm.flavour == "nostream" and body.get("stream"):
            return self._json(
                400, NO_STREAMING
            )  # refused before the model sees it: no script entry used
        refused = _content_parts_check(fmt is ANTHROPIC, body)
        if refused is not None:
            return self._json(*refused)
        reply = self.llm.next_reply(body)
        for check in reply.require:
            refused = CHECKS[check](body)
            if refused is not None:
                return self._json(*refused)
        self._answer(fmt, reply.limited(body), body)

    def _error(self, fmt: _Format, status: int, **said: Any) -> Any:
        return (
            flavour_error(self.llm.flavour, status, **said)
            if fmt is OPENAI
            else fmt.error(status, **said)
        )

    def _not_found(self, fmt: _Format, method: str) -> None:
        if self.llm.flavour == "ollama":  # Go's net/http, for any path Ollama does not serve
            return self._text(404, "404 page not found")
        self._json(404, fmt.bad_url(method, self.path))

    def _authorized(self, fmt: _Format) -> bool:
        expected = self.llm.api_key
        if expected is None:
            return True
        given = self.headers.get("x-api-key") or self.headers.get("Authorization", "").removeprefix(
            "Bearer "
        )
        if given == expected:
            return True
        self._json(401, self._error(fmt, 401))
        return False

    def _answer(self, fmt: _Format, reply: Reply, body: dict) -> None:
        self.llm.answering(+1)
        try:
            self._pause(reply.delay)
            if reply.drop:
                return self._reset()
            flavour = self.llm.flavour if fmt is OPENAI else "openai"
            headers = {} if reply.retry_after is None else {"retry-after": f"{reply.retry_after:g}"}
            if reply.loading:
                status, message = _LOADING.get(flavour, (503, "Loading model"))
                return self._json(status, self._error(fmt, status, message=message), headers)
            if reply.error and reply.error_after is None:
                if flavour == "gemini":  # Google says when to retry in the body, not in a header
                    headers = {}
                return self._json(
                    reply.error,
                    self._error(
                        fmt,
                        reply.error,
                        message=reply.error_message,
                        code=reply.error_code,
                        retry_after=reply.retry_after,
                    )
                    if fmt is OPENAI
                    else fmt.error(reply.error, message=reply.error_message, code=reply.error_code),
                    headers,
                )
            if body.get("stream") and flavour != "json-only":
                chunks = (
                    _openai_sse(reply, body, flavour) if fmt is OPENAI else fmt.stream(reply, body)
                )
                return self._stream(chunks, reply, split=flavour == "llamacpp")
            self._json(
                200,
                openai_completion(reply, body, flavour)
                if fmt is OPENAI
                else fmt.whole(reply, body),
            )
        except ClientGone:
            self.close_connection = True
            self.llm.client_gone()
        finally:
            self.llm.answering(-1)

    def _stream(self, chunks: Iterator[bytes], reply: Reply, *, split: bool = False) -> None:
        """`split`: each event in two HTTP chunks, cut mid-way, inside a UTF-8 character when there
        is one there (llama.cpp's server flushes whatever bytes it has)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        if reply.close_after is not None:
            chunks = list(chunks)
            self.send_header("Content-Length", str(sum(len(data) for data in chunks)))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for number, data in enumerate(chunks):
            if reply.cut_after is not None and number >= reply.cut_after:
                return self._reset()
            if reply.close_after is not None:
                if number >= reply.close_after:
                    self.close_connection = True
                    return
                self._write(data)
                continue
            if number:
                self._pause(reply.chunk_delay)
            for piece in (data[: len(data) // 2], data[len(data) // 2 :]) if split else (data,):
                self._write(f"{len(piece):X}\r\n".encode() + piece + b"\r\n")
        self._write(b"0\r\n\r\n")

    def _text(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self._write(data)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header(self._format().request_id_header, f"req_{uuid.uuid4().hex[:16]}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self._write(data)

    def _write(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ClientGone from exc

    def _pause(self, seconds: float) -> None:
        """Sleep, but notice a client that hangs up meanwhile (a cancelled request)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], left)
            if not readable:
                return
            if self.connection.recv(1, socket.MSG_PEEK) == b"":
                raise ClientGone
            time.sleep(min(left, 0.05))  # bytes waiting (a pipelined request), not a hang-up

    def _reset(self) -> None:
        # SO_LINGER 0: close() sends RST, what a crashed proxy or server looks like to the client.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()


__all__ = ["ANTHROPIC", "DEFAULT_MODELS", "FLAVOURS", "OPENAI", "Received", "Reply", "ScriptedLLM"]
