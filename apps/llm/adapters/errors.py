"""Turning the SDKs' exceptions into one clear LLMError, and deciding what is worth one retry.

Both official SDKs are generated from the same template: a status error carries `status_code`,
`response` and `body`; connection failures and timeouts are their own classes. So one reading
serves both, given the SDK module.
"""

from __future__ import annotations

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

_MODEL_MISSING = re.compile(r"model.*(not[ _]found|does not exist|not exist|unknown|not available|no such)", re.I)
_QUOTA = re.compile(r"insufficient_quota|quota|credit balance|billing|payment required", re.I)
# Failures inside a 200 stream (Anthropic's `error` event, OpenAI's error chunk): the type or code
# says what happened. Checked in order, so specific codes come before generic types.
_ERROR_TYPE_STATUS = {
    "invalid_api_key": 401, "model_not_found": 404, "insufficient_quota": 429, "rate_limit_exceeded": 429,
    "authentication_error": 401, "permission_error": 403, "not_found_error": 404, "rate_limit_error": 429,
    "invalid_request_error": 400, "api_error": 500, "overloaded_error": 529, "billing_error": 402,
}


_AGAIN = "{again}"


@dataclass(frozen=True)
class Failure:
    """What went wrong with one attempt: the error to raise, and how long to wait if worth a retry."""

    message: str  # may hold {again}: where "also on a retry" goes once the retry failed too
    kind: str
    retry_after: float | None  # None: not transient, raise at once
    status: int | None = None

    def error(self, *, retried: bool = False) -> LLMError:
        text = self.message.replace(_AGAIN, ", also on a retry" if retried else "")
        return LLMError(text, kind=self.kind, status=self.status)


def provider_message(body: Any) -> str:
    """The provider's own words, dug out of `{"error": {"message": ...}}` or `{"error": "..."}` (Ollama).

    Anything else (a web page, a proxy's banner) is not repeated: a base URL can point anywhere,
    and the user should learn only that it is not an LLM API.
    """
    while isinstance(body, dict):
        if isinstance(body.get("message"), str):
            return body["message"][:_MESSAGE_LIMIT]
        body = body.get("error")
    if isinstance(body, str) and body.strip() and not body.lstrip().startswith("<"):
        return body.strip()[:_MESSAGE_LIMIT]
    return "no error message an LLM API would give; is the base URL right?"


def _error_code(body: Any) -> str:
    """`code` or `type` of the error object, whichever the provider filled in."""
    parts = []
    while isinstance(body, dict):
        parts += [str(body.get("code") or ""), str(body.get("type") or "")]
        body = body.get("error")
    return " ".join(part for part in parts if part)


def _retry_after(exc: Any) -> float:
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name in ("retry-after-ms", "retry-after"):
        value = headers.get(name)
        try:
            seconds = float(value) / (1000 if name.endswith("-ms") else 1)
        except (TypeError, ValueError):
            continue
        return max(0.0, seconds)
    return RETRY_DELAY


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


def classify(exc: BaseException, *, sdk: ModuleType, base_url: str, model: str | None, timeout: float) -> Failure | None:
    """A Failure for an SDK exception, or None when `exc` is not the SDK's to explain."""
    # The anthropic SDK lets a transport error raised mid-stream through unwrapped.
    if isinstance(exc, (sdk.APITimeoutError, httpx2.TimeoutException)) and not _dropped(exc):
        # Not retried: a model that took the whole timeout would likely take it again, doubling the wait.
        return Failure(f"The provider at {base_url} did not answer within {timeout:g} s.", "unavailable", None)
    if isinstance(exc, (sdk.APIConnectionError, httpx2.TransportError)):
        reason = _connection_reason(exc)
        return Failure(f"Cannot reach the provider at {base_url}{_AGAIN}: {reason}.", "unavailable", RETRY_DELAY)
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
    if status == 402 or (status in (400, 403, 429) and _QUOTA.search(f"{code} {said}")):
        return Failure(f"The provider account at {base_url} is out of quota or credit ({detail}). "
                       "Check its plan and billing.", "quota", None, status)
    if status in (401, 403):
        what = "rejected the API key" if status == 401 else "refused access with this API key"
        return Failure(f"The provider at {base_url} {what} ({detail}). Check the provider's API key.",
                       "auth", None, status)
    # A 404 is about the model only when it says so: a wrong base URL 404s too.
    about_model = "model_not_found" in code or bool(model and (model in said or _MODEL_MISSING.search(said)))
    if model and status in (400, 404, 422) and about_model:
        return Failure(f"Model {model!r} is not available at {base_url} ({detail}). "
                       "Pick one from the provider's model list.", "model", None, status)
    if status == 429:
        wait = _retry_after(exc)
        return Failure(f"The provider at {base_url} is rate-limiting requests{_AGAIN} ({detail}). Try again shortly.",
                       "rate_limit", wait if wait <= MAX_RETRY_AFTER else None, status)
    if status >= 500 or status == 408:
        return Failure(f"The provider at {base_url} failed{_AGAIN} ({detail}). Try again later.",
                       "unavailable", min(_retry_after(exc), MAX_RETRY_AFTER), status)
    if status == 404:
        return Failure(f"Not found at {base_url} ({detail}): is the base URL right?", "bad_request", None, status)
    return Failure(f"The provider at {base_url} refused the request ({detail}).", "bad_request", None, status)
