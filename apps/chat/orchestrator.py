"""One turn: model → tool calls through the pool → results → model, until the model stops.

Runs on an asyncio loop (the worker's chat loop; embedded, the web process's loop), so one
process carries hundreds of turns that mostly wait on a model. Every completed message is in the
database before its event goes out; a stop cancels the model call and any tool call in flight.
A turn runs under its worker's lease (apps.chat.lease): when that worker is lost, a live one takes
the turn over and continues it from its last stored round (the model is asked again for a round
that was streaming; calls without a stored result are settled by apps.chat.unfinished).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction

from apps.chat import elicitation, host, lease, records, rounds, unfinished
from apps.chat.events import Control, EventSink
from apps.chat.history import TurnSetup, load_turn
from apps.chat.journal import commit_without_waiting_for_disk
from apps.chat.models import Message as MessageRow
from apps.chat.models import Turn
from apps.chat.tools import Toolbox, result_text, watch_call
from apps.core import metrics
from apps.core.threads import in_thread
from apps.llm.types import LLMError, Message, ToolCall, Usage

logger = logging.getLogger(__name__)
WAITING = {"state": "processing", "message": "Waiting for the model…"}
RECOVERING = "Recovering: the worker running this turn was lost; another one continues it…"


def _start(turn_id: uuid.UUID, taken_over: bool) -> TurnSetup | None:
    # One transaction that does not wait for the disk (journal.py): the claim's own commit waited
    # for a WAL flush, 1-10 ms on this kind of machine, all of it before the turn's first token.
    with transaction.atomic():
        commit_without_waiting_for_disk()
        if not records.start(turn_id, lease.WORKER, taken_over=taken_over):
            return None  # another worker runs it
        setup = load_turn(turn_id)
        if setup is None or taken_over:
            return setup
        # The user's message opens the turn's events (a client rebuilds a conversation from events
        # alone), then the first round's status. Stored with the claim, they cost no write of their
        # own that the first token would wait behind (a sink's writes go in order): 8 ms of its
        # time on benchmarks/chat.py (figures in the commits that made it so).
        seq = setup.first_seq
        opening = (
            {"type": "user_message", "seq": seq, "payload": _opening(setup)},
            {"type": "status", "seq": seq + 1, "payload": WAITING},
        )
        records.save_events(setup.conversation_id, list(opening))
        return replace(setup, first_seq=seq + len(opening), opening=opening)


def _opening(setup: TurnSetup) -> dict[str, Any]:
    opening: dict[str, Any] = {"turn": str(setup.turn_id), "text": setup.user_text}
    if setup.user_context:
        opening["context"] = setup.user_context
    return opening


async def run_turn(turn_id: uuid.UUID, *, taken_over: bool = False) -> None:
    """Run a turn (or continue one this worker's lease took over) to its end; returns quietly if it
    vanished, is not running any more, or another worker runs it."""
    setup = await in_thread(_start)(turn_id, taken_over)
    if setup is None:
        return
    # Held once claimed, not before: a lease renewal between the two found the row not yet this
    # worker's and dropped the turn as taken over (a busy worker's database threads queue `_start`).
    with lease.holding(lease.TURNS, turn_id):
        done = await in_thread(records.progress)(turn_id) if taken_over else None
        # Fenced as run steps are: once another worker took the turn over, nothing is written here.
        fence = records.StillHeld(turn_id, lease.WORKER)
        lost = partial(lease.lost, lease.TURNS, turn_id)
        sink = EventSink(setup.conversation_id, setup.first_seq, fence=fence, on_lost=lost)
        # Reading the endpoint's tools overlaps joining the control group (both wait on I/O).
        tools = asyncio.create_task(Toolbox.load(setup.user_id, setup.endpoint_id))
        try:
            async with Control(setup.conversation_id) as control:
                runner = TurnRunner(setup, sink, control, tools)
                if done is not None:
                    runner.rounds, runner.usage, runner.taken_over = done[0], list(done[1:]), True
                    runner.opened = await in_thread(records.opened)(setup.conversation_id, turn_id)
                await runner.run()
        except records.LeaseLost:
            pass  # its new worker continues and ends it
        finally:
            tools.cancel()
            await sink.close()


@dataclass
class TurnRunner:
    setup: TurnSetup
    sink: EventSink
    control: Control
    loading: asyncio.Task[Toolbox]
    tools: Toolbox | None = None
    partial: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    usage: list[int] = field(default_factory=lambda: [0, 0])
    rounds: int = 0
    cut: bool = False  # the last reply ended at the model's output limit
    taken_over: bool = False
    opened: bool = False  # its user_message event is stored (a turn taken over)

    async def run(self) -> None:
        for event in self.setup.opening:
            self.sink.announce(event)  # stored with the claim (`_start`)
        if not self.setup.opening and not self.opened:  # a turn taken over before its first write
            self.sink.emit("user_message", _opening(self.setup))
        if self.taken_over:
            self.sink.emit("status", {"state": "recovering", "message": RECOVERING})
        work = asyncio.create_task(self._rounds())
        stop = asyncio.create_task(self.control.stopped.wait())
        watch = asyncio.create_task(self._watch_stop())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                work.cancel()
                await asyncio.gather(work, return_exceptions=True)
                await self._end(Turn.Status.STOPPED, "", "Stopped.")
            elif isinstance(work.exception(), records.LeaseLost):
                return  # another worker took the turn over: it ends it
            else:
                await self._end(*self._outcome(work))
        finally:
            for task in (work, stop, watch):  # work too: this task itself may be what was cancelled
                task.cancel()

    def _outcome(self, work: asyncio.Task[str]) -> tuple[str, str, str]:
        exc = work.exception()
        if exc is None:
            error = work.result()
            if self.cut and not error:
                return Turn.Status.INCOMPLETE, "", "Cut at the model's output limit."
            return Turn.Status.COMPLETE, error, "Done."
        if isinstance(exc, LLMError):
            return Turn.Status.FAILED, f"The model provider failed: {exc.message}", "Failed."
        logger.error("chat turn %s failed", self.setup.turn_id, exc_info=exc)
        return (
            Turn.Status.FAILED,
            f"The turn failed unexpectedly ({type(exc).__name__}).",
            "Failed.",
        )

    async def _end(self, status: str, error: str, message: str) -> None:
        if status in (Turn.Status.STOPPED, Turn.Status.FAILED) and (self.partial or self.thoughts):
            # What the user saw of a reply that never completed stays with the turn.
            self._store(
                role=MessageRow.Role.ASSISTANT,
                text="".join(self.partial),
                reasoning="".join(self.thoughts),
                finish_reason="error" if status == Turn.Status.FAILED else "",
            )
        # Every message first: once the turn is finished a new one may start, from this history.
        await self.sink.flush()
        await in_thread(records.finish_turn)(
            self.setup.turn_id,
            status,
            error,
            rounds=self.rounds,
            input_tokens=self.usage[0],
            output_tokens=self.usage[1],
            worker=lease.WORKER,
        )
        metrics.chat_turn(status)
        if error:
            self.sink.emit("error", {"message": error})
        usage = {"input_tokens": self.usage[0], "output_tokens": self.usage[1]}
        self.sink.emit("status", {"state": "complete", "message": message, "usage": usage})
        self.sink.emit("end", {"turn": str(self.setup.turn_id), "status": status, "usage": usage})

    async def _watch_stop(self) -> None:
        # The backstop for a stop sent before this turn joined its control group. The first check
        # waits a second: the start of a turn is where its time to first token is spent.
        delay = 1.0
        while True:
            await asyncio.sleep(delay)
            if await in_thread(records.stop_requested)(self.setup.turn_id):
                self.control.stopped.set()
            delay = records.STOP_CHECK_SECONDS

    async def _rounds(self) -> str:
        """The loop; returns an error message when it ended on the round limit, else ""."""
        setup = self.setup
        history = list(setup.history)
        adapter = setup.adapter()  # shared with the loop's other turns: not closed here
        host.lend(
            host.Host(
                self._approve,
                self._spend,
                setup.provider_id,
                setup.model,
                elicit=self._elicit,
                show=self.sink.emit,
                elicited=self._elicited,
            )
        )
        if setup.unsent:  # the calls its lost worker had sent
            self.tools = await self.loading
            history.extend(
                await asyncio.gather(*(self._tool(call, settle=True) for call in setup.unsent))
            )
        for round_ in range(settings.MCPHUB_CHAT_MAX_ROUNDS - self.rounds):
            if round_ or not self.setup.opening:  # the first one's status is stored already
                self.sink.emit("status", WAITING)
            if self.tools is None:
                self.tools = await self.loading
            reply = await self._model_round(adapter, history)
            if self.taken_over:
                self.taken_over = False  # one write, after the first round it completed
                await in_thread(records.made_progress)(self.setup.turn_id)
            history.append(reply.message())
            calls = reply.calls
            if not calls:
                self.cut = reply.finish_reason == "length"
                return ""
            if unfinished.may_change_data(self.tools, calls):
                # The reply and its calls stored before a call that may change data goes out: a
                # worker taking the turn over settles them instead of repeating them unasked.
                await self.sink.flush()
            history.extend(await asyncio.gather(*(self._tool(call) for call in calls)))
        return f"Stopped after {settings.MCPHUB_CHAT_MAX_ROUNDS} rounds (the per-turn limit): ask again to continue."

    async def _model_round(self, adapter: Any, history: list[Message]) -> rounds.ModelReply:
        self.partial, self.thoughts = [], []
        clock = time.perf_counter()
        reply = await rounds.model_round(
            adapter,
            model=self.setup.model,
            history=history,
            toolbox=self.tools,
            on_text=self._text,
            on_status=self._status,
            on_reasoning=self._reasoning,
            patience=settings.MCPHUB_CHAT_PROVIDER_WAIT,
        )
        calls, usage = reply.calls, reply.usage
        self.partial, self.thoughts = [], []
        self.usage[0] += usage.input_tokens
        self.usage[1] += usage.output_tokens
        self.rounds += 1
        self._store(
            role=MessageRow.Role.ASSISTANT,
            text=reply.shown_text,
            tool_calls=[{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls],
            reasoning=reply.reasoning,
            replay=self._replay(reply),
            finish_reason=reply.finish_reason,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            duration_ms=(time.perf_counter() - clock) * 1000,
        )
        if reply.finish_reason == "refusal":
            # Anthropic's refusal may follow streamed text; OpenAI's message came apart from the text.
            self.sink.emit("refusal", {"text": "" if reply.text else reply.finish.refusal})
        for call in calls:
            self.sink.emit(
                "tool_call", {"id": call.id, "name": call.name, "arguments": call.arguments}
            )
        return reply

    async def _tool(self, call: ToolCall, *, settle: bool = False) -> Message:
        result, duration = await self._result(call, settle=settle)
        is_error = bool(result.get("isError"))
        text = result_text(result, settings.MCPHUB_CHAT_TOOL_RESULT_CHARS)
        self._store(
            role=MessageRow.Role.TOOL,
            text=text,
            tool_call_id=call.id,
            tool_name=call.name[:64],
            is_error=is_error,
            result=result,
            duration_ms=duration,
        )
        shown = {
            "id": call.id,
            "name": call.name,
            "isError": is_error,
            "content": result.get("content") or [],
            "duration_ms": round(duration, 1),
        }
        if result.get("structuredContent") is not None:
            shown["structuredContent"] = result["structuredContent"]
        self.sink.emit("tool_result", shown)
        return Message(role="tool", text=text, tool_call_id=call.id, is_error=is_error)

    async def _result(self, call: ToolCall, *, settle: bool) -> tuple[dict[str, Any], float]:
        """The call's result and how long the tool took (not counting the wait for approval)."""
        send = unfinished.settle if settle else rounds.call_tool
        return await send(
            self.tools,
            call,
            approval_reason=self.setup.approval_reason,
            approve=self._approve,
            on_running=lambda: self.sink.emit(
                "status", {"state": "tool", "tool": call.name, "message": f"Running {call.name}…"}
            ),
            watch=watch_call(call.id, self.sink.emit),
        )

    async def _status(self, message: str) -> None:
        self.sink.emit("status", {"state": "processing", "message": message})

    def _replay(self, reply: rounds.ModelReply) -> dict[str, Any] | None:
        replay = reply.replay()
        return replay and {**replay, "provider": self.setup.provider_id}  # see history.to_messages

    def _text(self, chunk: str) -> None:
        self.partial.append(chunk)
        self.sink.emit("text", {"text": chunk})

    def _reasoning(self, chunk: str) -> None:
        if not self.thoughts:
            self.sink.emit("status", {"state": "processing", "message": "The model is thinking…"})
        self.thoughts.append(chunk)
        self.sink.emit("reasoning", {"text": chunk})

    async def _approve(
        self, call: ToolCall, reason: str, *, editable: dict[str, Any] | None = None
    ) -> bool | dict[str, Any]:
        """The user's allow (True), deny (False) or, for a sampling request (`editable`: what may
        be changed, host.editable), the changes they allow it with."""
        asked = {"id": call.id, "name": call.name, "arguments": call.arguments, "reason": reason}
        self.sink.emit("approval_required", {**asked, "editable": editable} if editable else asked)
        self.sink.emit(
            "status",
            {"state": "tool", "tool": call.name, "message": f"{call.name} waits for your approval"},
        )
        return await self.control.approval(call.id)

    async def _elicit(self, request: dict[str, Any]) -> dict[str, Any]:
        """A backend asks the user (elicitation/create): the page shows its form or link until the
        user answers; an answer that does not fit the form is shown again with what is wrong."""
        shown = {"id": f"elicit-{uuid.uuid4().hex[:12]}", **request}
        self.sink.emit("elicitation_required", shown)
        self.sink.emit("status", {"state": "tool", "message": "A server waits for your answer"})
        link = request.get("elicitationId") if request.get("mode") == "url" else None
        while True:
            answer = await self.control.answer(shown["id"], link)
            if answer["action"] != "accept" or link is not None:
                answer["content"] = None
                break
            try:
                schema = request.get("requestedSchema") or {}
                answer["content"] = elicitation.check_content(schema, answer["content"])
                break
            except elicitation.ElicitationError as exc:
                self.sink.emit("elicitation_required", {**shown, "error": exc.message})
        self.sink.emit("elicitation_answered", {"id": shown["id"], "action": answer["action"]})
        return answer

    async def _elicited(self, elicitation_id: str) -> None:
        """A backend says a URL elicitation is done (the user finished at its link): the page
        shows it, and if the turn still waits for the user's answer to it, the wait ends."""
        self.sink.emit("elicitation_complete", {"elicitationId": elicitation_id})
        self.control.complete(elicitation_id)

    async def _spend(self, usage: Usage) -> None:
        """A sampling answered by the user's model during a tool call counts with the turn."""
        self.usage[0] += usage.input_tokens
        self.usage[1] += usage.output_tokens

    def _store(self, **fields: Any) -> None:
        """A message, written with the turn's next events (before any of them is sent)."""
        self.sink.store(
            MessageRow(
                conversation_id=self.setup.conversation_id, turn_id=self.setup.turn_id, **fields
            )
        )
