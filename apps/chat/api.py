"""REST API: conversations (CRUD), their messages, starting a turn with a new message, stopping it."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.chat import selectors, services
from apps.chat.models import Conversation
from apps.chat.serializers import (
    ConversationSerializer,
    MessageSerializer,
    NewMessageSerializer,
    TurnStartedSerializer,
)


class TurnRefused(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "busy"


def _refused(error: services.ChatError) -> exceptions.APIException:
    if error.code in ("busy", "idle"):
        return TurnRefused({"detail": error.message, "code": error.code})
    return exceptions.ValidationError({"detail": error.message, "code": error.code})


class ConversationViewSet(viewsets.ModelViewSet):
    """Your chat conversations; post a message to start a turn, watch it on /ws/chat/<id>/."""

    queryset = Conversation.objects.none()
    serializer_class = ConversationSerializer

    def get_queryset(self) -> QuerySet[Conversation]:
        return selectors.conversations_for(self.request.user)

    def perform_create(self, serializer: ConversationSerializer) -> None:
        try:
            serializer.instance = services.create_conversation(
                owner=self.request.user, **serializer.validated_data
            )
        except services.ChatError as exc:
            raise _refused(exc) from None

    def perform_update(self, serializer: ConversationSerializer) -> None:
        try:
            services.update_conversation(
                conversation=serializer.instance, **serializer.validated_data
            )
        except services.ChatError as exc:
            raise _refused(exc) from None

    def perform_destroy(self, instance: Conversation) -> None:
        services.delete_conversation(conversation=instance)

    @extend_schema(methods=["get"], responses=MessageSerializer(many=True))
    @extend_schema(
        methods=["post"], request=NewMessageSerializer, responses={202: TurnStartedSerializer}
    )
    @action(detail=True, methods=["get", "post"])
    def messages(self, request: Request, pk: str) -> Response:
        """GET: the history (text, tool calls and results, usage). POST {"text"}: start a turn (202)."""
        conversation = self.get_object()
        if request.method == "POST":
            return self._start(request, conversation)
        page = self.paginate_queryset(selectors.history(conversation))
        return self.get_paginated_response(MessageSerializer(page, many=True).data)

    @extend_schema(request=None, responses={202: TurnStartedSerializer})
    @action(detail=True, methods=["post"])
    def stop(self, request: Request, pk: str) -> Response:
        """Stop the running turn (as the chat's stop button): its model call and tool calls in
        flight are cancelled and it ends `stopped`; 409 when no turn runs."""
        conversation = self.get_object()
        try:
            turn = services.stop_turn(conversation=conversation)
        except services.ChatError as exc:
            raise _refused(exc) from None
        return Response(
            {"turn": str(turn.pk), "status": turn.status}, status=status.HTTP_202_ACCEPTED
        )

    def _start(self, request: Request, conversation: Conversation) -> Response:
        data = NewMessageSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            turn = services.start_turn(conversation=conversation, text=data.validated_data["text"])
        except services.ChatError as exc:
            raise _refused(exc) from None
        return Response(
            {"turn": str(turn.pk), "status": turn.status}, status=status.HTTP_202_ACCEPTED
        )
