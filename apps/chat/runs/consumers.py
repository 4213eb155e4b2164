"""`/ws/runs/<run-id>/`: a run's events for its owner's page (another user's run: closed with 4403).

Server → client, each `{"type", "seq", "payload"}`:
- `step` {round, text, tool_calls, input_tokens, output_tokens, context_chars, max_rounds}: a
  completed round, `seq` = its round (1, 2, …). The step is stored before its event is sent.
- `status` {status, round}, `approval_required` {id, name, arguments, reason}, `end` {status, answer,
  error, rounds}: `seq` = the number of rounds completed when it was sent. So every event with
  seq N comes after step N and before step N+1: order by seq, a step first within a seq. Dedupe
  a step by its seq, an `approval_required` by (seq, id), a `status` or `end` by (seq, type).
- `provider_status` {message, round}: what the provider is doing before it answers ("The model is
  loading…"), then "" once it answers; live only (never replayed).
- `error` {message, code} with `seq: null`: about this connection's own message (unknown type,
  bad payload); it changes nothing and is not part of the run.

Client → server: `{"type": "resume", "payload": {"after": N}}` (the last round the client shows):
every stored step with round > N, then the run's state now, numbered as above: `end` once it
finished (succeeded, incomplete, failed, cancelled, interrupted), an `approval_required` per call it waits
on, else its `status`. Only steps are stored (RunStep, no event table), so a replay sends the
current state rather than the states that came before it.

Live events wait behind a `resume` (apps.chat.resumable, as on the chat socket) and those it
covered are dropped: steps up to the last one sent, state events older than or equal to the
state it sent. Publishing is best effort: before any event, steps the client lacks are read back
from the database, so a lost `step` event leaves no gap.
"""

from __future__ import annotations

import uuid
from typing import Any

from apps.chat.resumable import ResumableConsumer, database_sync_to_async
from apps.chat.runs import selectors
from apps.chat.runs.loop import run_group
from apps.chat.runs.models import Run

Key = tuple[int, str, Any]


def _find(user, run_id: uuid.UUID) -> tuple[Run, int] | None:
    run = selectors.run_progress(user, run_id)
    return None if run is None else (run, run.rounds)


def _key(event: dict[str, Any]) -> Key:
    return event["seq"], event["type"], event["payload"].get("id")


class RunConsumer(ResumableConsumer):
    async def connect(self) -> None:
        from apps.chat import runtime

        runtime.bind_web_loop()
        self.replayed: tuple[int, set[Key]] = (
            -1,
            set(),
        )  # the state a resume sent: its seq, its events
        self.run = await self.open(self.scope["url_route"]["kwargs"]["run_id"], run_group, _find)

    async def _replay(self, after: int) -> None:
        events = await database_sync_to_async(selectors.replay)(self.run.pk, after)
        if not events:
            await self.close(code=4403)  # deleted meanwhile
            return
        for event in events:
            await self.send_json(event)
        state = [e for e in events if e["type"] != "step"]
        self.replayed = (state[0]["seq"], {_key(e) for e in state})
        self.cursor = max(self.cursor, after, state[0]["seq"])

    async def run_event(self, message: dict[str, Any]) -> None:
        await self._live(message)

    async def _deliver(self, message: dict[str, Any]) -> None:
        event = message["event"]
        seq, is_step = event["seq"], event["type"] == "step"
        if (seq <= self.cursor) if is_step else self._superseded(event):
            return
        await self._fill_gap(seq - 1 if is_step else seq)
        await self.send_json(event)
        if is_step:
            self.cursor = seq

    def _superseded(self, event: dict[str, Any]) -> bool:
        """A state event the resume's replay sent already, or older than the state it sent."""
        seq, sent = self.replayed
        return event["seq"] < seq or _key(event) in sent

    async def _fill_gap(self, until: int) -> None:
        if until <= self.cursor:
            return
        for event in await database_sync_to_async(selectors.step_events)(
            self.run, self.cursor, until=until
        ):
            await self.send_json(event)
            self.cursor = event["seq"]
