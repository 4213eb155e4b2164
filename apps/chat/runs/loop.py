"""Executes a run on the chat's orchestrator loop (apps.chat.runtime), round after round.

Each round is the shared model round and tool calls (apps.chat.rounds); the step is committed
before its event goes out. Cancel (API, hub tool, control message or the heartbeat's backstop)
cancels the model call and the tool calls in flight, whose backends get notifications/cancelled.
A worker shutting down lets each run finish its current round and hands it over (apps.chat.lease):
a live worker continues it at once. A run taken over from a lost worker continues from its last
stored step; calls of a round that was sending them are settled, not sent again unasked
(apps.chat.unfinished).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

from apps.catalog.models import HUB_SERVER
from apps.chat import host, lease, rounds, unfinished
from apps.chat.events import SEND_PATIENCE, Control
from apps.chat.journal import journal
from apps.chat.runs import context, records
from apps.chat.runs.models import Run, RunStep
from apps.chat.tools import Toolbox, watch_call
from apps.core import metrics
from apps.core.channel_layer import group_send_patiently
from apps.core.threads import in_thread
from apps.llm.types import LLMError, ToolCall, Usage

logger = logging.getLogger(__name__)
# Set while the process shuts down (SIGTERM): runs stop at their next round boundary.
draining = lease.draining
_active: set[uuid.UUID] = set()
# How often a running run looks for a cancel its control message may have missed.
CANCEL_CHECK_SECONDS = 10.0
RECOVERING = "Its worker was lost: another worker continues it from round {round}."


class Limit(Exception):
    """The run hit one of its limits; the message says which."""


class Incomplete(Exception):
    """The model's answer stayed cut at its output limit after the allowed continuations."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.answer = answer


class ModelRefused(Exception):
    """The model refused the task; the message is its refusal."""


def run_group(run_id: uuid.UUID | str) -> str:
    return f"run.{uuid.UUID(str(run_id)).hex}"


async def publish(
    run_id: uuid.UUID, kind: str, payload: dict[str, Any], *, rounds: int | None = None
) -> None:
    """Best effort: the steps are in the database already, so a lost event loses nothing.

    `seq` (see apps.chat.runs.consumers): a step's round; for any other event `rounds`, the rounds
    completed when it is sent."""
    event = {
        "type": kind,
        "seq": payload["round"] if kind == "step" else rounds,
        "payload": payload,
    }
    message = {"type": "run.event", "event": event}
    try:
        await group_send_patiently(
            get_channel_layer(), run_group(run_id), message, patience=SEND_PATIENCE
        )
    except Exception:  # noqa: BLE001
        logger.warning("runs: could not publish %s of %s", kind, run_id, exc_info=True)


async def publish_end(run: Run) -> None:
    """A run's end, told to its followers as the loop tells it."""
    payload = {"status": run.status, "answer": run.answer, "error": run.error, "rounds": run.rounds}
    await publish(run.pk, "end", payload, rounds=run.rounds)


async def execute(run_id: uuid.UUID, *, taken_over: bool = False) -> None:
    """Run a queued run (or one this worker's lease took over) to its end; returns quietly if it
    vanished or someone else has it."""
    claim = records.taken_over if taken_over else records.claim
    run = await in_thread(claim)(run_id, lease.WORKER)
    if run is None:
        return
    _active.add(run.pk)
    try:
        with lease.holding(lease.RUNS, run.pk):
            await _execute(run, taken_over)
    finally:
        _active.discard(run.pk)


async def _execute(run: Run, taken_over: bool) -> None:
    # A resumed run goes on from its stored steps; a new one has none to read.
    fields = ("round", "text", "tool_calls", "reasoning", "replay", "finish_reason")
    steps = (
        await in_thread(lambda: list(run.steps.order_by("round").values(*fields)))()
        if run.rounds
        else []
    )
    async with Control(run.pk) as control:
        await RunRunner(run, steps, control, taken_over=taken_over).execute()


async def save_step(run_id: uuid.UUID, *, elapsed_s: float, **fields: Any) -> None:
    """A completed round and the run's totals, in one transaction of the loop's journal (a crash
    keeps both or neither), shared with the other turns and runs writing meanwhile."""
    row = RunStep(run_id=run_id, **fields)
    await journal().write(
        rows=[row],
        updates=[partial(records.count_step, row, elapsed_s=elapsed_s, worker=lease.WORKER)],
    )


def active() -> int:
    return len(_active)


@dataclass
class RunRunner:
    run: Run
    steps: list[dict[str, Any]]
    control: Control
    taken_over: bool = False
    toolbox: Toolbox | None = None
    started: float = field(default_factory=time.monotonic)
    tokens: int = 0
    lent: host.Host | None = None  # what the run lends its calls (each call its own `elicited`)

    def __post_init__(self) -> None:
        self.tokens = (
            self.run.input_tokens + self.run.output_tokens
        )  # a resumed run counts what it spent

    @property
    def elapsed(self) -> float:
        return self.run.elapsed_s + (time.monotonic() - self.started)

    async def execute(self) -> None:
        done = len(self.steps)
        status: dict[str, Any] = {"status": Run.Status.RUNNING, "round": done}
        if self.taken_over:
            status["message"] = RECOVERING.format(round=done + 1)
        await publish(self.run.pk, "status", status, rounds=done)
        work = asyncio.create_task(self._rounds())
        stop = asyncio.create_task(self.control.stopped.wait())
        beat = asyncio.create_task(self._heartbeat())
        waits = {work, stop}
        if self.run.time_limit_s:
            waits.add(
                asyncio.create_task(
                    asyncio.sleep(max(0.0, self.run.time_limit_s - self.run.elapsed_s))
                )
            )
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if work.done() and isinstance(work.exception(), records.LeaseLost):
                logger.warning("run %s was taken over by another worker; dropped here", self.run.pk)
            elif work.done() and isinstance(work.exception(), Drained):
                await self._hand_over()
            elif work.done():
                await self._end(*self._outcome(work))
            else:
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
                if stop.done():
                    await self._end(Run.Status.CANCELLED, "", "Cancelled.")
                else:
                    await self._end(
                        Run.Status.FAILED,
                        "",
                        f"Stopped: the time limit ({self.run.time_limit_s} s) ran out.",
                    )
        finally:
            for task in waits | {beat}:
                task.cancel()

    def _outcome(self, work: asyncio.Task[str]) -> tuple[str, str, str]:
        exc = work.exception()
        if exc is None:
            return Run.Status.SUCCEEDED, work.result(), ""
        if isinstance(exc, Limit):
            return Run.Status.FAILED, "", str(exc)
        if isinstance(exc, Incomplete):
            times = settings.MCPHUB_RUN_CONTINUATIONS + 1
            return (
                Run.Status.INCOMPLETE,
                exc.answer,
                f"The answer was cut at the model's output limit {times} times; resume the run to let it go on.",
            )
        if isinstance(exc, ModelRefused):
            return Run.Status.FAILED, "", f"The model refused: {exc}"
        if isinstance(exc, LLMError):
            return Run.Status.FAILED, "", f"The model provider failed: {exc.message}"
        logger.error("run %s failed", self.run.pk, exc_info=exc)
        return Run.Status.FAILED, "", f"The run failed unexpectedly ({type(exc).__name__})."

    async def _end(self, status: str, answer: str, error: str) -> None:
        await in_thread(records.finish)(
            self.run.pk, status, answer=answer, error=error, elapsed_s=self.elapsed
        )
        metrics.run_ended(status)
        await publish(
            self.run.pk,
            "end",
            {"status": status, "answer": answer, "error": error, "rounds": len(self.steps)},
            rounds=len(self.steps),
        )

    async def _hand_over(self) -> None:
        """The worker shuts down after a completed round: a live worker continues the run at once."""
        await in_thread(lease.release)(lease.RUNS, [self.run.pk])
        done = len(self.steps)
        message = f"Its worker shut down: another worker continues it from round {done + 1}."
        await publish(
            self.run.pk,
            "status",
            {"status": Run.Status.RUNNING, "round": done, "message": message},
            rounds=done,
        )

    async def _heartbeat(self) -> None:
        # The backstop for a cancel sent before this run joined its control group (the lease,
        # apps.chat.lease, says the run is alive): first checked once it joined, so none is missed.
        await self.control.joined()
        while True:
            if not await in_thread(records.heartbeat)(self.run.pk):
                self.control.stopped.set()
            await asyncio.sleep(CANCEL_CHECK_SECONDS)

    async def _rounds(self) -> str:
        """The loop; returns the final answer, raises Limit/Drained/LLMError."""
        from apps.chat.providers import adapter as cached_adapter

        run = self.run
        if run.provider is None:
            raise Limit("The run's LLM provider was deleted.")
        self.toolbox = await load_toolbox(run)
        adapter = cached_adapter(
            run.provider
        )  # the loop's shared one (as chat turns use): not closed here
        model = run.model or run.provider.default_model
        self.lent = host.Host(
            self._approve, self._spend, run.provider_id, model, elicit=self._elicit
        )
        host.lend(self.lent)
        unsent = run.in_flight
        if unsent and unsent.get("round") == len(self.steps) + 1:
            await self._settle(unsent)  # the round its lost worker was sending calls of
        while True:
            self._check_limits()
            ctx = context.build(
                run.task,
                self.steps,
                limit=settings.MCPHUB_RUN_CONTEXT_CHARS,
                keep_rounds=settings.MCPHUB_RUN_KEEP_ROUNDS,
                result_chars=settings.MCPHUB_CHAT_TOOL_RESULT_CHARS,
            )
            answer = await self._round(adapter, model, ctx)
            if answer is not None:
                return answer

    def _check_limits(self) -> None:
        run, done = self.run, len(self.steps)
        if draining.is_set():
            raise Drained()
        if done >= run.max_rounds:
            raise Limit(
                f"Stopped after {done} rounds (the run's max_rounds) without a final answer."
            )
        if run.token_budget and self.tokens >= run.token_budget:
            raise Limit(
                f"Stopped: the token budget ({run.token_budget}) is used up ({self.tokens} tokens)."
            )

    async def _round(self, adapter: Any, model: str, ctx: context.Context) -> str | None:
        clock = time.perf_counter()
        reply = await rounds.model_round(
            adapter,
            model=model,
            history=ctx.messages,
            toolbox=self.toolbox,
            on_status=self._status,
            patience=settings.MCPHUB_RUN_PROVIDER_WAIT,
        )
        reply_fields = {
            "round": len(self.steps) + 1,
            "text": reply.shown_text,
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.calls],
            "reasoning": reply.reasoning,
            "finish_reason": reply.finish_reason,
            "replay": reply.replay(),
            "input_tokens": reply.usage.input_tokens,
            "output_tokens": reply.usage.output_tokens,
            "context_chars": ctx.chars,
            "model_ms": reply.duration_ms,
        }
        if unfinished.may_change_data(self.toolbox, reply.calls):
            # Stored before a call that may change data goes out: a worker taking the run over
            # settles these calls instead of asking the model again and repeating them unasked.
            await journal().write(updates=[partial(records.intend, self.run.pk, reply_fields)])
        results = await asyncio.gather(*(self._tool(call) for call in reply.calls))
        await self._complete(reply_fields, list(results), clock)
        return None if reply.calls else self._answer(reply)

    async def _settle(self, unsent: dict[str, Any]) -> None:
        """The stored round's calls, each re-sent, asked about or answered as of unknown outcome."""
        clock = time.perf_counter()
        calls = unfinished.stored_calls(unsent)
        results = await asyncio.gather(*(self._tool(call, settle=True) for call in calls))
        await self._complete(unsent, list(results), clock)

    async def _complete(
        self, reply: dict[str, Any], results: list[dict[str, Any]], clock: float
    ) -> None:
        """The round's step stored (with the run's totals), then told to the run's followers."""
        shown = {
            "round": reply["round"],
            "text": reply["text"],
            "tool_calls": results,
            "reasoning": reply["reasoning"],
            "finish_reason": reply["finish_reason"],
        }
        usage = {key: reply[key] for key in ("input_tokens", "output_tokens", "context_chars")}
        await save_step(
            self.run.pk,
            elapsed_s=self.elapsed,
            **shown,
            **usage,
            replay=reply["replay"],
            model_ms=reply["model_ms"],
            duration_ms=(time.perf_counter() - clock) * 1000,
        )
        self.steps.append({**shown, "replay": reply["replay"]})
        self.tokens += reply["input_tokens"] + reply["output_tokens"]
        await publish(self.run.pk, "step", {**shown, **usage, "max_rounds": self.run.max_rounds})

    def _answer(self, reply: rounds.ModelReply) -> str | None:
        """The final answer (with the parts cut at the output limit before it); None: a continuation round is next."""
        if reply.finish_reason == "refusal":
            raise ModelRefused(reply.shown_text or "no reason given")
        cut = []  # the answer's earlier parts: the latest steps cut at the output limit, oldest first
        for step in reversed(self.steps[:-1]):
            if step.get("tool_calls") or step.get("finish_reason") != "length":
                break
            cut.insert(0, step["text"])
        answer = "".join([*cut, reply.text])
        if reply.finish_reason != "length":
            return answer
        if len(cut) >= settings.MCPHUB_RUN_CONTINUATIONS:
            raise Incomplete(answer)
        return None

    async def _status(self, message: str) -> None:
        """What the provider is doing before it answers (a loading model, an outage waited out), for
        the run's page; kept as the run's `error` meanwhile, so the API and a page loaded now say it too."""
        done = len(self.steps)
        await in_thread(records.note)(self.run.pk, message)
        # Its own type: a `status` of the same seq as the state a resume replayed would be dropped as seen.
        await publish(
            self.run.pk, "provider_status", {"message": message, "round": done}, rounds=done
        )

    async def _tool(self, call: ToolCall, *, settle: bool = False) -> dict[str, Any]:
        send = unfinished.settle if settle else rounds.call_tool
        # Lent for this call's task only (gather runs each call in its own): the links its backend
        # says are done are kept with the call in its step, so the run's page shows them on reload.
        completed: list[str] = []
        elicited = partial(self._elicited, completed=completed)
        host.lend(dataclasses.replace(self.lent, elicited=elicited))
        result, duration = await send(
            self.toolbox,
            call,
            approval_reason=self._approval_reason,
            approve=self._approve,
            watch=watch_call(
                call.id,
                lambda kind, payload: publish(self.run.pk, kind, payload, rounds=len(self.steps)),
            ),
        )
        return {
            "id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "result": result,
            "isError": bool(result.get("isError")),
            "duration_ms": round(duration, 1),
            **({"elicitation_complete": completed} if completed else {}),
        }

    async def _elicit(self, request: dict[str, Any]) -> dict[str, Any]:
        """A backend asks the owner (elicitation/create): the run waits (`waiting_input`, kept in
        the database) for the answer given on its page or by the API, checked there."""
        asked = {"id": f"elicit-{uuid.uuid4().hex[:12]}", **request}
        await in_thread(records.wait_for_input)(self.run.pk, asked)
        await publish(self.run.pk, "elicitation_required", asked, rounds=len(self.steps))
        link = request.get("elicitationId") if request.get("mode") == "url" else None
        try:
            return await self.control.answer(asked["id"], link)
        finally:
            await in_thread(records.input_answered)(self.run.pk, asked["id"])

    async def _elicited(self, elicitation_id: str, *, completed: list[str]) -> None:
        """A backend says a URL elicitation is done (the owner finished at its link): the run's
        page shows it (and its call's stored step: `completed`), and if the run still waits for the
        owner's answer to it, the wait ends."""
        completed.append(elicitation_id)
        payload = {"elicitationId": elicitation_id}
        await publish(self.run.pk, "elicitation_complete", payload, rounds=len(self.steps))
        self.control.complete(elicitation_id)

    async def _spend(self, usage: Usage) -> None:
        """A sampling answered by the user's model during a tool call counts with the run."""
        self.tokens += usage.input_tokens + usage.output_tokens
        await in_thread(records.add_tokens)(self.run.pk, usage.input_tokens, usage.output_tokens)

    def _approval_reason(self, annotations: object) -> str | None:
        endpoint = self.run.endpoint
        return endpoint.approval_reason(annotations) if endpoint is not None else None

    async def _approve(
        self, call: ToolCall, reason: str, *, editable: dict[str, Any] | None = None
    ) -> bool | dict[str, Any]:
        """The run waits (`waiting_approval`) for its owner's allow/deny (API or Runs page), or,
        for a sampling request (`editable`), the changes they allow it with."""
        pending = {"id": call.id, "name": call.name, "arguments": call.arguments, "reason": reason}
        if editable:
            pending["editable"] = editable
        await in_thread(records.wait_for_approval)(self.run.pk, pending)
        await publish(self.run.pk, "approval_required", pending, rounds=len(self.steps))
        try:
            return await self.control.approval(call.id)
        finally:
            await in_thread(records.approval_answered)(self.run.pk, call.id)


class Drained(Exception):
    """The process is shutting down; the run stopped after a completed round."""


async def load_toolbox(run: Run) -> Toolbox:
    """The endpoint's tools (as its MCP clients see them, at the endpoint's committed version),
    limited to the run's servers, never the hub's own. A run named servers for its work: when they
    yield no tool it stops here (Limit) rather than let the model answer without them."""
    toolbox = await Toolbox.load(run.owner_id, run.endpoint_id, committed=True)
    view = toolbox.view
    keep = {}
    if view is not None:
        keep = {
            name: exposed
            for name, exposed in view.tools.items()
            if exposed.server != HUB_SERVER and (not run.servers or exposed.server in run.servers)
        }
        if not run.servers:
            keep = await _within_budget(run, keep)
        toolbox.view = dataclasses.replace(view, tools=keep)
    if run.servers and not keep:
        raise Limit(
            f"No tools of {', '.join(run.servers)} are available to this run (none enabled on its "
            "endpoint, or the servers are disabled or unavailable): enable some, then resume it."
        )
    return toolbox


async def _within_budget(run: Run, tools: dict[str, Any]) -> dict[str, Any]:
    """Every enabled tool, unless together they exceed the endpoint's token budget: then those the
    discovery search ranks best for the task, within the budget (a model's context is finite).
    The total comes from the endpoint's view (each tool's catalog estimate): the query summing it
    was ~2 % of the worker's CPU while 100 runs started (benchmarks/runs.py, py-spy)."""
    endpoint = run.endpoint
    total = sum(exposed.tokens for exposed in tools.values())
    if endpoint is None or total <= endpoint.token_budget:
        return tools
    return await in_thread(_chosen)(run, tools)


def _chosen(run: Run, tools: dict[str, Any]) -> dict[str, Any]:
    """The tools the discovery search ranks best for the run's task, within the endpoint's budget
    (sync ORM: call from a thread)."""
    from apps.discovery.suggest import suggest_tools

    endpoint = run.endpoint
    found = suggest_tools(
        endpoint=endpoint, task=run.task, budget=endpoint.token_budget, limit=len(tools)
    )
    chosen = {
        s.key for s in found.tools
    }  # `server.tool`: the exposed names of a wider catalog may differ
    return {
        name: e for name, e in tools.items() if f"{e.server}.{e.backend_name}" in chosen
    } or tools
