"""The chat page: conversations on the left, the selected one streamed over /ws/chat/<id>/.

The page renders the conversation list and pickers; the messages come from the WebSocket's event
log (`resume` from 0), so a reload shows exactly what a live viewer saw.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.chat import selectors, services
from apps.chat.models import Conversation
from apps.llm.selectors import providers_for
from apps.web.forms import ConversationForm


def _own(request: HttpRequest, conversation_id: str) -> Conversation:
    conversation = selectors.conversation_for(request.user, conversation_id)
    if conversation is None:
        raise Http404("No such conversation.")
    return conversation


@login_required
@require_GET
def chat_page(request: HttpRequest, conversation_id: str | None = None) -> HttpResponse:
    conversations = selectors.conversations_for(request.user)
    if conversation_id is None:
        latest = conversations.first()
        if latest is not None:
            return redirect("web:conversation", conversation_id=latest.pk)
        current = None
    else:
        current = _own(request, conversation_id)
    context = {
        "nav": "chat",
        "conversations": conversations,
        "current": current,
        "form": ConversationForm.for_conversation(current, user=request.user) if current else None,
        "has_provider": providers_for(request.user).exists(),
        "running": bool(current and current.running),
    }
    return render(request, "web/chat.html", context)


@login_required
@require_POST
def new_conversation(request: HttpRequest) -> HttpResponse:
    conversation = services.create_conversation(owner=request.user)
    return redirect("web:conversation", conversation_id=conversation.pk)


@login_required
@require_POST
def conversation_settings(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _own(request, conversation_id)
    form = ConversationForm(request.POST, user=request.user)
    if form.is_valid():
        services.update_conversation(conversation=conversation, **form.cleaned_data)
        messages.success(request, "Saved.")
    else:
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
    return redirect("web:conversation", conversation_id=conversation.pk)


@login_required
@require_POST
def delete_conversation(request: HttpRequest, conversation_id: str) -> HttpResponse:
    services.delete_conversation(conversation=_own(request, conversation_id))
    messages.success(request, "Conversation deleted.")
    return redirect("web:chat")
