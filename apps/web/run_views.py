"""The Runs page: start a run, list yours with progress, and a run's own page whose steps arrive
live over /ws/runs/<id>/ (earlier ones are rendered here), with cancel and resume."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.chat.runs import selectors, services
from apps.chat.runs.models import Run
from apps.llm.selectors import providers_for
from apps.toolsets.models import Endpoint


def _own(request: HttpRequest, run_id: str) -> Run:
    run = selectors.run_for(request.user, run_id)
    if run is None:
        raise Http404("No such run.")
    return run


@login_required
@require_GET
def runs_page(request: HttpRequest) -> HttpResponse:
    context = {
        "nav": "runs",
        "runs": selectors.runs_for(request.user)[:100],
        "providers": providers_for(request.user),
        "endpoints": Endpoint.objects.filter(owner=request.user),
    }
    return render(request, "web/runs.html", context)


def _number(value: str) -> int | None:
    return int(value) if value.strip().isdigit() else None


@login_required
@require_POST
def start_run(request: HttpRequest) -> HttpResponse:
    post = request.POST
    servers = [s.strip() for s in post.get("servers", "").split(",") if s.strip()]
    try:
        run = services.start_run(
            owner=request.user,
            task=post.get("task", ""),
            servers=servers or None,
            endpoint=post.get("endpoint") or None,
            model=post.get("model", ""),
            max_rounds=_number(post.get("max_rounds", "")),
            token_budget=_number(post.get("token_budget", "")),
            time_limit_s=_number(post.get("time_limit_s", "")),
            resources=post.get("resources", "").split() or None,
        )
    except services.RunError as exc:
        messages.error(request, exc.message)
        return redirect("web:runs")
    return redirect("web:run", run_id=run.pk)


@login_required
@require_POST
def run_from_conversation(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """The conversation's task (what the user asked in it) as a run, with its provider, model and endpoint."""
    from apps.chat import selectors as chat_selectors

    conversation = chat_selectors.conversation_for(request.user, conversation_id)
    if conversation is None:
        raise Http404("No such conversation.")
    asked = [m.text for m in chat_selectors.history(conversation).filter(role="user")]
    try:
        run = services.start_run(
            owner=request.user,
            task="\n\n".join(asked),
            provider=conversation.provider,
            model=conversation.model,
            endpoint=conversation.endpoint,
        )
    except services.RunError as exc:
        messages.error(request, exc.message)
        return redirect("web:conversation", conversation_id=conversation.pk)
    return redirect("web:run", run_id=run.pk)


@login_required
@require_GET
def run_page(request: HttpRequest, run_id: str) -> HttpResponse:
    run = _own(request, run_id)
    context = {
        "nav": "runs",
        "run": run,
        "steps": selectors.steps_of(run),
        "status_labels": dict(Run.Status.choices),  # runs.js shows a live status as the page does
    }
    return render(request, "web/run.html", context)


@login_required
@require_POST
def cancel_run(request: HttpRequest, run_id: str) -> HttpResponse:
    return _change(request, run_id, services.request_cancel, "Cancelling.")


@login_required
@require_POST
def resume_run(request: HttpRequest, run_id: str) -> HttpResponse:
    return _change(request, run_id, services.resume_run, "Resumed.")


@login_required
@require_POST
def approve_run(request: HttpRequest, run_id: str) -> HttpResponse:
    allow = request.POST.get("allow") == "true"

    def answer(*, run: Run) -> Run:
        edit = request.POST.get("edit")  # a sampling request's changes, as JSON (host.js)
        try:
            edit = json.loads(edit) if edit else None
        except ValueError:
            raise services.RunError("The edit is not valid JSON.") from None
        return services.check_approval(
            run=run, call_id=request.POST.get("call_id"), allow=allow, edit=edit
        )

    return _change(request, run_id, answer, "Allowed." if allow else "Denied.")


@login_required
@require_POST
def answer_run(request: HttpRequest, run_id: str) -> HttpResponse:
    """The owner's answer to a backend's question (host.js posts it as JSON); JSON back."""
    run = _own(request, run_id)
    try:
        answer = json.loads(request.body or b"{}")
        if not isinstance(answer, dict):
            raise ValueError
        services.answer_input(
            run=run, id=answer.get("id"), action=answer.get("action"), content=answer.get("content")
        )
    except ValueError:
        return JsonResponse({"error": "Send the answer as a JSON object."}, status=400)
    except services.RunError as exc:
        return JsonResponse({"error": exc.message}, status=400)
    return JsonResponse({"ok": True})


def _change(request: HttpRequest, run_id: str, service, done: str) -> HttpResponse:
    run = _own(request, run_id)
    try:
        service(run=run)
        messages.success(request, done)
    except services.RunError as exc:
        messages.error(request, exc.message)
    return redirect("web:run", run_id=run.pk)
