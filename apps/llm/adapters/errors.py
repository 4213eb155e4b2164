"""Turning the SDKs' exceptions into one clear LLMError, and deciding what is worth one retry.

Both official SDKs are generated from the same template: a status error carries `status_code`,
`response` and `body`; connection failures and timeouts are their own classes. So one reading
serves both, given the SDK module.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import aiohttp
import httpx2

from apps.llm.types import LLMError

# Longest a Retry-After may make us wait before the one retry; past it we report instead.
MAX_RETRY_AFTER = 20.0
# The wait before the retry when the provider does not say.
RETRY_DELAY = 0.5
_MESSAGE_LIMIT = 300

_MODEL_MISSING = re.compile(
    r"model.*(not[ _]found|does not exist|not exist|unknown|not available|no such)", re.I
)
_QUOTA = re.compile(r"insufficient_quota|quota|credit balance|billing|payment required", re.I)
# A local server's cold start or full queue, in its own words: llama.cpp's 503 "Loading model", LM
# Studio's "Model is loading", Ollama's 503 "server busy, please try again" / "no slots available".
# Waited out (retrying.py) rather than retried once.
_LOADING = re.compile(
    r"loading model|model is (still |being )?loading|model.{0,40}\bis loading", re.I
)
_BUSY = re.compile(r"server busy|no slots available|busy, please try again", re.I)
# Google's RetryInfo detail ("37s"): the provider's own wait, as a Retry-After header would say.
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
# Failures inside a 200 stream (Anthropic's `error` event, OpenAI's error chunk): the type or code
# says what happened. Checked in order, so specific codes come before generic types.
_ERROR_TYPE_STATUS = {
    "invalid_api_key": 401,
    "model_not_found": 404,
    "insufficient_quota": 429,
    "rate_limit_exceeded": 429,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "invalid_request_error": 400,
    "api_error": 500,
    "overloaded_error": 529,
    "billing_error": 402,
}


_AGAIN = "{again}"


@dataclass(frozen=True)
class Failure:
    """What went wrong with one attempt: the error to raise, and how long to wait if worth a retry."""

    message: str  # may hold {again}: where "also on a retry" goes once the retry failed too
    kind: str
    retry_after: float | None  # None: not transient, raise at once
    status: int | None = None
    # "loading" / "busy": a local server warming up or queue-full, waited out with backoff; how
    # long the provider asked for (Retry-After), if it did.
    waiting: str = ""
    asked_wait: float | None = None
    # Set for a connection that broke: what to say when it broke mid-reply (the transport's own
    # words, e.g. aiohttp's "400, message: Not enough data to satisfy transfer length header", are not).
    broke: str = ""

    def error(self, *, retried: bool = False, waited: float = 0.0) -> LLMError:
        again = (
            f" after {waited:.0f} s of waiting"
            if waited
            else ", also on a retry"
            if retried
            else ""
        )
        return LLMError(self.message.replace(_AGAIN, again), kind=self.kind, status=self.status)

    @property
    def transient(self) -> bool:
        """Worth waiting out when the caller is patient: refused or dropped connections, 5xx, 429
        (a Retry-After too long for the one quick retry included), never a timeout or a quota."""
        return self.kind in ("unavailable", "rate_limit") and (
            self.retry_after is not None or self.asked_wait is not None
        )


def _layers(body: Any, depth: int = 0) -> Iterator[Any]:
    """The error body and what is nested in it, outermost first: `{"error": {...}}` (OpenAI,
    Anthropic, vLLM), Gemini's list `[{"error": {...}}]`, and an error object quoted as JSON text
    inside another's message (a proxy passing Google's error on)."""
    yield body
    if depth > 4:
        return
    inner: Any = None
    if isinstance(body, list) and body:
        inner = body[0]
    elif isinstance(body, dict):
        inner = (
            body.get("error")
            if isinstance(body.get("error"), (dict, list))
            else _json_text(body.get("message"))
        )
    else:
        inner = _json_text(body)
    if inner is not None:
        yield from _layers(inner, depth + 1)


def _json_text(value: Any) -> Any:
    if not isinstance(value, str) or value.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def _words(layer: Any) -> str | None:
    """One layer's message: `message`, `detail` (FastAPI servers; a string or a validation list),
    `error` as a string (Ollama, LM Studio), or plain text that is not a web page."""
    if isinstance(layer, str):
        text = layer.strip()
        return text if text and not text.startswith("<") and _json_text(text) is None else None
    if not isinstance(layer, dict):
        return None
    for key in ("message", "detail", "error"):
        value = layer.get(key)
        if isinstance(value, str) and value.strip() and _json_text(value) is None:
            return value.strip()
        if key == "detail" and isinstance(value, list):
            said = "; ".join(
                str(item["msg"]) for item in value if isinstance(item, dict) and item.get("msg")
            )
            if said:
                return said
    return None


def provider_message(body: Any) -> str:
    """The provider's own words, in whichever shape it sends them (see `_layers`, `_words`); the
    innermost wins, as a wrapper's message is the inner error quoted.

    Anything else (a web page, a proxy's banner) is not repeated: a base URL can point anywhere,
    and the user should learn only that it is not an LLM API.
    """
    for layer in reversed(list(_layers(body))):
        said = _words(layer)
        if said:
            return said[:_MESSAGE_LIMIT]
    return "no error message an LLM API would give; is the base URL right?"


def _error_code(body: Any) -> str:
    """`code`, `type` and `status` of the error objects (Gemini: 429 / "RESOURCE_EXHAUSTED")."""
    parts = []
    for layer in _layers(body):
        if isinstance(layer, dict):
            parts += [str(layer.get(key) or "") for key in ("code", "type", "status")]
    return " ".join(part for part in parts if part)


def _details(body: Any) -> list[dict]:
    """Google's typed error details (RetryInfo, QuotaFailure, ...)."""
    return [
        d
        for layer in _layers(body)
        if isinstance(layer, dict)
        for d in layer.get("details") or ()
        if isinstance(d, dict)
    ]


def _google_retry_delay(body: Any) -> float | None:
    for detail in _details(body):
        match = _DELAY.match(str(detail.get("retryDelay") or ""))
        if match:
            return float(match.group(1))
    return None


def _daily_quota(body: Any) -> bool:
    """A QuotaFailure naming a per-day quota: nothing to retry until tomorrow."""
    return any(
        "PerDay" in str(v.get("quotaId") or "")
        for d in _details(body)
        for v in d.get("violations") or ()
        if isinstance(v, dict)
    )


def _asked_wait(exc: Any) -> float | None:
    """What the provider asked for: Retry-After(-ms), else Google's RetryInfo."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name in ("retry-after-ms", "retry-after"):
        value = headers.get(name)
        try:
            seconds = float(value) / (1000 if name.endswith("-ms") else 1)
        except (TypeError, ValueError):
            continue
        return max(0.0, seconds)
    return _google_retry_delay(getattr(exc, "body", None))


def _retry_after(exc: Any) -> float:
    asked = _asked_wait(exc)
    return RETRY_DELAY if asked is None else asked


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then what caused it, and so on (each once)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


def _connection_reason(exc: BaseException) -> str:
    """Plain words for why: the OS's ("Connection refused") beats the SDK's "Connection error."."""
    reason = str(exc)
    for cause in _causes(exc):
        if isinstance(cause, OSError) and cause.errno:
            return os.strerror(cause.errno)
        if str(cause):
            reason = str(cause)
    return re.sub(r"^\[Errno -?\d+\]\s*", "", reason)[:_MESSAGE_LIMIT]


def _dropped(exc: BaseException) -> bool:
    """A connection the provider reset or closed. The SDKs' aiohttp transport reports every
    aiohttp connection error, these included, as a connect timeout: only a real timeout is one."""
    return any(
        isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError)
        for cause in _causes(exc)
    )


def classify(
    exc: BaseException, *, sdk: ModuleType, base_url: str, model: str | None, timeout: float
) -> Failure | None:
    """A Failure for an SDK exception, or None when `exc` is not the SDK's to explain."""
    # The anthropic SDK lets a transport error raised mid-stream through unwrapped.
    if isinstance(exc, (sdk.APITimeoutError, httpx2.TimeoutException)) and not _dropped(exc):
        # Not retried: a model that took the whole timeout would likely take it again, doubling the wait.
        return Failure(
            f"The provider at {base_url} did not answer within {timeout:g} s.",
            "unavailable",
            None,
            broke=f"the provider at {base_url} sent nothing more for {timeout:g} s",
        )
    if isinstance(exc, (sdk.APIConnectionError, httpx2.TransportError)):
        reason = _connection_reason(exc)
        return Failure(
            f"Cannot reach the provider at {base_url}{_AGAIN}: {reason}.",
            "unavailable",
            RETRY_DELAY,
            broke=f"the connection to the provider at {base_url} closed before the reply was complete",
        )
    if isinstance(exc, sdk.APIStatusError):
        return _status_failure(exc, exc.status_code, base_url=base_url, model=model)
    if isinstance(exc, sdk.APIError):  # the openai SDK's error chunk inside a 200 stream
        return _status_failure(exc, 200, base_url=base_url, model=model)
    return None


def _status_failure(exc: Any, status: int, *, base_url: str, model: str | None) -> Failure:
    body = exc.body
    code = _error_code(body)
    if status == 200:  # an error event inside a stream
        status = next((s for t, s in _ERROR_TYPE_STATUS.items() if t in code), 500)
    said = provider_message(body)
    detail = f"HTTP {status}: {said}"
    # Quota wording alone is not enough: Gemini words a per-minute limit "You exceeded your current
    # quota" too, and then says when to retry (RetryInfo) unless the quota is a daily one.
    per_minute = _google_retry_delay(body) is not None and not _daily_quota(body)
    if (
        status == 402
        or _daily_quota(body)
        or (status in (400, 403, 429) and _QUOTA.search(f"{code} {said}") and not per_minute)
    ):
        return Failure(
            f"The provider account at {base_url} is out of quota or credit ({detail}). "
            "Check its plan and billing.",
            "quota",
            None,
            status,
        )
    waiting = "loading" if _LOADING.search(said) else "busy" if _BUSY.search(said) else ""
    if waiting and status not in (401, 403, 404):
        what = "The model is still loading" if waiting == "loading" else "The provider is busy"
        return Failure(
            f"{what} at {base_url}{_AGAIN} ({detail}). Try again shortly.",
            "unavailable",
            min(_retry_after(exc), MAX_RETRY_AFTER),
            status,
            waiting=waiting,
            asked_wait=_asked_wait(exc),
        )
    if status in (401, 403):
        what = "rejected the API key" if status == 401 else "refused access with this API key"
        return Failure(
            f"The provider at {base_url} {what} ({detail}). Check the provider's API key.",
            "auth",
            None,
            status,
        )
    # A 404 is about the model only when it says so: a wrong base URL 404s too.
    about_model = "model_not_found" in code or bool(
        model and (model in said or _MODEL_MISSING.search(said))
    )
    if model and status in (400, 404, 422) and about_model:
        return Failure(
            f"Model {model!r} is not available at {base_url} ({detail}). "
            "Pick one from the provider's model list.",
            "model",
            None,
            status,
        )
    if status == 429:
        wait = _retry_after(exc)
        return Failure(
            f"The provider at {base_url} is rate-limiting requests{_AGAIN} ({detail}). Try again shortly.",
            "rate_limit",
            wait if wait <= MAX_RETRY_AFTER else None,
            status,
            asked_wait=_asked_wait(exc),
        )
    if status >= 500 or status == 408:
        return Failure(
            f"The provider at {base_url} failed{_AGAIN} ({detail}). Try again later.",
            "unavailable",
            min(_retry_after(exc), MAX_RETRY_AFTER),
            status,
            asked_wait=_asked_wait(exc),
        )
    if status == 404:
        return Failure(
            f"Not found at {base_url} ({detail}): is the base URL right?",
            "bad_request",
            None,
            status,
        )
    return Failure(
        f"The provider at {base_url} refused the request ({detail}).", "bad_request", None, status
    )
