"""The hub's Prometheus metrics: counted where things happen, merged over processes at scrape time.

Counters and histograms are written by whichever process does the work (web processes for
gateway calls, workers for chat turns) into files under MCPHUB_METRICS_DIR — prometheus_client's
multiprocess mode, chosen by settings.py before this module is imported — and one scrape of any
web process merges every process's files. Gauges that describe the present (sessions open, pool
connections) are not kept in files, where a dead process's last value would linger: the `/metrics`
view asks for them at scrape time and passes them in as extra collectors.

Files of processes that have exited stay (their counts are part of the totals): clear the directory
when the whole hub restarts (a tmpfs volume does that by itself).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# From a cached echo (~1 ms) to a slow backend's timeout.
LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)

TOOL_CALLS = Counter(
    "mcphub_tool_calls",
    "Tool calls, from MCP clients and chat, by backend server and tool",
    ["server", "tool"],
)
TOOL_ERRORS = Counter(
    "mcphub_tool_call_errors",
    "Tool calls that failed or returned isError, by backend server and tool",
    ["server", "tool"],
)
TOOL_LATENCY = Histogram(
    "mcphub_tool_call_duration_seconds",
    "Tool call latency through the hub, by backend server and tool",
    ["server", "tool"],
    buckets=LATENCY_BUCKETS,
)
CHAT_TURNS = Counter(
    "mcphub_chat_turns", "Chat turns ended, by final status (complete, failed, stopped)", ["status"]
)
RUNS = Counter(
    "mcphub_runs",
    "Autonomous runs ended, by final status (succeeded, incomplete, failed, cancelled, interrupted)",
    ["status"],
)
HANDED_OVER = Counter(
    "mcphub_work_handed_over",
    "Chat turns and runs a web process handed to a worker, by task and way "
    "(link: on its direct link to a pool worker; celery: as a Celery task)",
    ["task", "way"],
)

SAMPLING_TOKENS = Counter(
    "mcphub_gateway_sampling_tokens",
    "Tokens of the users' own models spent answering backends' sampling during gateway calls, "
    "by backend server and direction (input, output)",
    ["server", "direction"],
)

# The labelled children, by (server, tool): `labels()` costs a lock and a tuple build per call.
_children: dict[tuple[str, str], tuple[Any, Any, Any]] = {}


def tool_call(server: str, tool: str, *, ok: bool, seconds: float) -> None:
    """Count one tool call (the call log's hook: every recorded call is counted once)."""
    children = _children.get((server, tool))
    if children is None:
        children = _children[(server, tool)] = (
            TOOL_CALLS.labels(server, tool),
            TOOL_ERRORS.labels(server, tool),
            TOOL_LATENCY.labels(server, tool),
        )
    calls, errors, latency = children
    calls.inc()
    if not ok:
        errors.inc()
    latency.observe(seconds)


def chat_turn(status: str) -> None:
    CHAT_TURNS.labels(status).inc()


def run_ended(status: str) -> None:
    RUNS.labels(status).inc()


def handed_over(task: str, way: str) -> None:
    HANDED_OVER.labels(task, way).inc()


def render(extra: Iterable[Collector] = ()) -> bytes:
    """Every process's counters and histograms, plus `extra` collectors, in the text format."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    for collector in extra:
        registry.register(collector)
    return generate_latest(registry)


def gateway_sampling(server: str, input_tokens: int, output_tokens: int) -> None:
    SAMPLING_TOKENS.labels(server, "input").inc(input_tokens)
    SAMPLING_TOKENS.labels(server, "output").inc(output_tokens)
