"""Writes for autonomous runs: start, cancel, resume (requests), and what the worker records.

Starting or resuming commits the run, then enqueues the worker's task in `transaction.on_commit`.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.catalog.models import (
    HUB_SERVER,
)  # a run never gets the hub's own tools (no runs starting runs)
from apps.chat import elicitation, host, lease, runtime
from apps.chat.runs.models import Run
from apps.chat.runs.tasks import execute_run
from apps.core.compiled import insert
from apps.core.errors import UserError
from apps.toolsets.models import Endpoint
from apps.toolsets.selectors import default_endpoint_for

logger = logging.getLogger(__name__)
MAX_TASK = 100_000
MAX_ROUNDS_CAP = 100_000


class RunError(UserError):
    """A run request the hub refuses, with a message the user can act on."""


def _resolve_provider(owner, model: str, provider=None):
    """(provider, model): `model` may name one of the owner's providers, else a model of the
    default (or given) provider."""
    from apps.chat.providers import NO_PROVIDER
    from apps.llm.selectors import default_provider_for, providers_for

    if provider is not None and not providers_for(owner).filter(pk=provider.pk).exists():
        raise RunError("Unknown provider.", code="provider")
    if provider is None and model:
        named = (
            providers_for(owner)
            .filter(name=model)
            .order_by(F("owner_id").asc(nulls_last=True))
            .first()
        )
        if named is not None:
            return named, ""
    provider = provider or default_provider_for(owner)
    if provider is None:
        raise RunError(NO_PROVIDER, code="no_provider")
    return provider, model


def _resolve_endpoint(owner, endpoint: Endpoint | str | None) -> Endpoint:
    if isinstance(endpoint, str):
        endpoint = Endpoint.objects.filter(owner=owner, slug=endpoint).first()
        if endpoint is None:
            raise RunError("Unknown endpoint.", code="endpoint")
    elif endpoint is not None and endpoint.owner_id != owner.pk:
        raise RunError("Unknown endpoint.", code="endpoint")
    endpoint = endpoint or default_endpoint_for(owner)
    if endpoint is None:
        raise RunError(
            "You have no endpoint: create one to choose the tools a run may use.", code="endpoint"
        )
    return endpoint


def _check_servers(owner_id: int, endpoint: Endpoint, servers: list[str]) -> list[str]:
    """Named servers must have tools enabled on the endpoint: in the endpoint's view, the tools
    its MCP clients get (cached per process and version; read as committed, as the run reads it).
    It replaces a query (enabled tools of the servers visible to the owner, with its permissions)
    that took 14.5 % of the web's CPU while 100 runs started through `autonomous_with_mcp`
    (benchmarks/runs.py, py-spy): two interleaved pairs, web CPU per run 13.3 / 15.5 → 9.2 / 8.0
    ms, Postgres 7.6 / 8.0 → 5.4 / 5.6 ms, the 100 runs 1.34 / 1.48 → 1.29 / 1.30× one alone."""
    if not isinstance(servers, list) or not all(isinstance(s, str) and s for s in servers):
        raise RunError("'servers' must be a list of server names.")
    names = list(dict.fromkeys(servers))

    async def usable(view) -> set[str]:
        return {tool.server for tool in view.tools.values()} - {HUB_SERVER}

    offered = _on_endpoint(owner_id, endpoint.pk, usable, committed=True)
    missing = [name for name in names if name not in offered]
    if missing:
        raise RunError(
            f"No tools of {', '.join(missing)} are enabled on endpoint {endpoint.slug}: enable some first.",
            code="servers",
        )
    return names


def _limit(value: Any, name: str, *, cap: int) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= cap:
        raise RunError(f"'{name}' must be a whole number from 1 to {cap}.")
    return value


def start_run(
    *,
    owner,
    task: Any,
    servers: list[str] | None = None,
    endpoint: Endpoint | str | None = None,
    provider=None,
    model: str = "",
    max_rounds: int | None = None,
    token_budget: int | None = None,
    time_limit_s: int | None = None,
    resources: list[str] | None = None,
) -> Run:
    """A queued run the worker picks up once this commits; bad input raises RunError, changing nothing.

    `resources`: URIs of the endpoint's resources, read now and attached to the task as context."""
    if not isinstance(task, str) or not task.strip():
        raise RunError("The run needs a non-empty 'task'.")
    if len(task) > MAX_TASK:
        raise RunError(f"The task is too long (at most {MAX_TASK} characters).")
    provider, model = _resolve_provider(owner, (model or "").strip(), provider)
    endpoint = _resolve_endpoint(owner, endpoint)
    if resources:
        task = f"{task}\n\n{_attached(owner.pk, endpoint.pk, resources)}"
    run = Run(
        owner=owner,
        task=task,
        provider=provider,
        model=model,
        endpoint=endpoint,
        heartbeat_at=timezone.now(),
        servers=_check_servers(owner.pk, endpoint, servers) if servers else [],
        max_rounds=_limit(max_rounds, "max_rounds", cap=MAX_ROUNDS_CAP)
        or settings.MCPHUB_RUN_MAX_ROUNDS,
        token_budget=_limit(token_budget, "token_budget", cap=10**12),
        time_limit_s=_limit(time_limit_s, "time_limit_s", cap=30 * 86400),
    )
    # One INSERT (its own transaction, unless the caller's), from a statement built once: the
    # ORM's save() compiled it again for every run (in process, Postgres: 290 → 215 µs of CPU).
    insert(Run, [run])
    transaction.on_commit(lambda: _enqueue(run.pk))
    return run


def _attached(owner_id: int, endpoint_id: int, uris: list[str]) -> str:
    """The resources' content as the chat attaches it to a message (apps.chat.context_items)."""
    from apps.chat import context_items

    async def read(view) -> str:
        return (await context_items.gather(view, prompt=None, resources=uris)).attached_text

    return _on_endpoint(owner_id, endpoint_id, read)


def read_resource(*, run: Run, uri: Any) -> list[dict[str, Any]]:
    """`uri` read from the run's endpoint as its owner (a resource link in a tool result)."""
    from apps.chat import context_items

    if run.endpoint_id is None:
        raise RunError("The run has no endpoint any more.", code="no_endpoint")
    return _on_endpoint(
        run.owner_id, run.endpoint_id, lambda view: context_items.read_resource(view, uri)
    )


def _on_endpoint(owner_id: int, endpoint_id: int, work: Any, *, committed: bool = False) -> Any:
    from asgiref.sync import async_to_sync

    from apps.chat import context_items

    async def run() -> Any:
        view = await context_items.endpoint_view(owner_id, endpoint_id, committed=committed)
        return await work(view)

    try:
        return async_to_sync(run)()
    except UserError as exc:
        raise RunError(exc.message, code=exc.code) from None


def _enqueue(run_id: uuid.UUID) -> None:
    runtime.hand_off(execute_run, str(run_id))


def request_cancel(*, run: Run) -> Run:
    """Queued or interrupted: cancelled at once. Running: the worker stops it (model call and tool
    calls in flight) and marks it cancelled."""
    if run.status not in (*Run.ACTIVE, Run.Status.INTERRUPTED):
        raise RunError(f"The run is {run.status}: nothing to cancel.", code="finished")
    updated = Run.objects.filter(
        pk=run.pk, status__in=(Run.Status.QUEUED, Run.Status.INTERRUPTED)
    ).update(
        status=Run.Status.CANCELLED,
        cancel_requested=True,
        finished_at=timezone.now(),
        error="Cancelled.",
    )
    if not updated:
        Run.objects.filter(pk=run.pk).update(cancel_requested=True)
        transaction.on_commit(lambda: _send_control(run.pk, "stop"))
    run.refresh_from_db()
    return run


def resume_run(*, run: Run) -> Run:
    """An interrupted (or failed) run continues from its last completed step."""
    if run.status not in Run.RESUMABLE:
        raise RunError(
            f"The run is {run.status}: only an interrupted, failed or incomplete run can be resumed.",
            code="not_resumable",
        )
    with transaction.atomic():
        updated = Run.objects.filter(pk=run.pk, status=run.status).update(
            status=Run.Status.QUEUED,
            error="",
            finished_at=None,
            cancel_requested=False,
            heartbeat_at=timezone.now(),
            recoveries=0,
        )
        if not updated:
            raise RunError("The run changed meanwhile: reload it.", code="conflict")
        transaction.on_commit(lambda: _enqueue(run.pk))
    run.refresh_from_db()
    return run


def check_approval(*, run: Run, call_id: Any, allow: Any, edit: Any = None) -> Run:
    """Validate an allow/deny for a call the run waits on; the worker receives it by control message.
    `edit`: a sampling request's changes (host.check_edit), allowed with them."""
    if not isinstance(call_id, str) or not isinstance(allow, bool):
        raise RunError("Send 'call_id' (a string) and 'allow' (true or false).")
    pending = next((p for p in run.pending_approvals if p.get("id") == call_id), None)
    if pending is None:
        raise RunError(f"The run is not waiting for approval of {call_id!r}.", code="conflict")
    if edit is not None:
        if not allow or not pending.get("editable"):
            raise RunError("Only a sampling request can be edited, and only to allow it.")
        try:
            edit = host.check_edit(pending["editable"], edit)
        except host.SamplingEditError as exc:
            raise RunError(exc.message) from None
    transaction.on_commit(
        lambda: _send_control(run.pk, "approve", call_id=call_id, allow=allow, edit=edit)
    )
    return run


def answer_input(*, run: Run, id: Any, action: Any, content: Any = None) -> Run:
    """Check the owner's answer to a question the run waits on (its form's values against the
    question's schema); the worker receives it by control message."""
    try:
        request_id, action, content = elicitation.parse_answer(
            {"id": id, "action": action, "content": content}
        )
        asked = next((p for p in run.pending_input if p.get("id") == request_id), None)
        if asked is None:
            raise RunError(f"The run is not waiting for an answer to {id!r}.", code="conflict")
        if action == "accept" and asked.get("mode") != "url":
            content = elicitation.check_content(asked.get("requestedSchema") or {}, content)
    except elicitation.ElicitationError as exc:
        raise RunError(exc.message) from None
    transaction.on_commit(
        lambda: _send_control(run.pk, "elicit", id=request_id, answer=action, content=content)
    )
    return run


def _send_control(run_id: uuid.UUID, action: str, **fields: Any) -> None:
    from asgiref.sync import async_to_sync

    from apps.chat.events import send_control

    try:
        async_to_sync(send_control)(run_id, action, **fields)
    except Exception:  # noqa: BLE001 - a cancel is also seen by the heartbeat; an approval can be sent again
        logger.warning("runs: could not send %s to run %s", action, run_id, exc_info=True)


# A running run no live worker took over for this long (apps.chat.lease takes one over within
# seconds): no worker is left to continue it. A queued run not taken for this long lost its hand-off.
ORPHANED_AFTER = timedelta(seconds=60)
NO_WORKER = (
    "No live worker took the run over within a minute of losing its own: resume it to continue "
    "once a worker runs."
)


def sweep_lost_runs() -> int:
    """Runs whose worker was lost and that no live worker took over (none is running) become
    `interrupted`: resumable. Queued runs no worker took are handed to the workers again."""
    cutoff = timezone.now() - ORPHANED_AFTER
    lost = list(
        Run.objects.filter(lease.silent_since(cutoff), status__in=Run.WORKING).values_list(
            "pk", flat=True
        )[:1000]
    )
    ended = interrupt(lost, NO_WORKER)
    if ended:
        from asgiref.sync import async_to_sync

        from apps.chat.runs.loop import publish_end

        for run in ended:
            async_to_sync(publish_end)(run)
    requeue_lost_runs()
    return len(ended)


def interrupt(run_ids: list[uuid.UUID], reason: str) -> list[Run]:
    """Active runs that cannot continue become `interrupted` with `reason`; those it ended (their
    followers are to be told: loop.publish_end)."""
    ended = [
        run_id
        for run_id in run_ids
        if Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).update(
            status=Run.Status.INTERRUPTED, error=reason, pending_approvals=[], worker=""
        )
    ]
    return list(Run.objects.filter(pk__in=ended).only("status", "answer", "error", "rounds"))


def requeue_lost_runs() -> list[uuid.UUID]:
    """A queued run's heartbeat is the time it was (last) handed to the workers. One still queued
    after ORPHANED_AFTER lost its hand-off (the broker or the enqueue failed, the task was dropped):
    hand it over again. A run is claimed by exactly one worker, so a second hand-off of a run that
    merely waited in a long queue does no harm; each run is handed over at most once per ORPHANED_AFTER."""
    now = timezone.now()
    cutoff = now - ORPHANED_AFTER
    waiting = Run.objects.filter(status=Run.Status.QUEUED, cancel_requested=False).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff)
    )
    requeued = []
    for run_id in waiting.values_list("pk", flat=True)[:1000]:
        # The update decides: another sweeper (beat and a worker both sweep) may have taken it.
        if (
            Run.objects.filter(pk=run_id, status=Run.Status.QUEUED)
            .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True))
            .update(heartbeat_at=now)
        ):
            requeued.append(run_id)
    for run_id in requeued:
        try:
            _enqueue(run_id)
        except Exception:  # noqa: BLE001 - the broker is down: the next sweep tries again
            logger.warning(
                "runs: could not hand queued run %s to the workers again", run_id, exc_info=True
            )
    if requeued:
        logger.warning(
            "runs: %d queued run(s) never taken by a worker were handed over again", len(requeued)
        )
    return requeued
