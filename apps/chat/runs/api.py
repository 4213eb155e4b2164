"""REST API: start a run, list and read your runs (with steps), cancel, resume."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.chat.runs import selectors, services
from apps.chat.runs.models import Run
from apps.chat.runs.serializers import (
    AnswerSerializer,
    ApprovalSerializer,
    RunDetailSerializer,
    RunSerializer,
    StartRunSerializer,
)


class RunConflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def _refused(error: services.RunError) -> exceptions.APIException:
    if error.code in ("finished", "not_resumable", "conflict"):
        return RunConflict({"detail": error.message, "code": error.code})
    return exceptions.ValidationError({"detail": error.message, "code": error.code})


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Your autonomous runs: a task an LLM works on with your tools in the background."""

    queryset = Run.objects.none()
    serializer_class = RunSerializer

    def get_queryset(self) -> QuerySet[Run]:
        runs = selectors.runs_for(self.request.user)
        return runs.prefetch_related("steps") if self.action == "retrieve" else runs

    def get_serializer_class(self):
        return RunDetailSerializer if self.action == "retrieve" else RunSerializer

    @extend_schema(request=StartRunSerializer, responses={201: RunSerializer})
    def create(self, request: Request) -> Response:
        data = StartRunSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            run = services.start_run(owner=request.user, **data.validated_data)
        except services.RunError as exc:
            raise _refused(exc) from None
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        return self._change(lambda run: services.request_cancel(run=run))

    @extend_schema(request=None, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        return self._change(lambda run: services.resume_run(run=run))

    @extend_schema(request=ApprovalSerializer, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        """Allow or deny a tool call the run waits on (`pending_approvals`)."""
        data = ApprovalSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return self._change(lambda run: services.check_approval(run=run, **data.validated_data))

    @extend_schema(request=None, responses=None)
    @action(detail=True, methods=["get"])
    def resource(self, request: Request, pk: str) -> Response:
        """Read `?uri=` from the run's endpoint: a resource link in its tool results, opened in place."""
        run = self.get_object()
        try:
            contents = services.read_resource(run=run, uri=request.query_params.get("uri", ""))
        except services.RunError as exc:
            raise _refused(exc) from None
        return Response({"uri": request.query_params["uri"], "contents": contents})

    @extend_schema(request=AnswerSerializer, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def answer(self, request: Request, pk: str) -> Response:
        """Answer a backend's question the run waits on (`pending_input`): accept with the form's
        values, decline or cancel."""
        data = AnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return self._change(lambda run: services.answer_input(run=run, **data.validated_data))

    def _change(self, service) -> Response:
        try:
            run = service(self.get_object())
        except services.RunError as exc:
            raise _refused(exc) from None
        return Response(RunSerializer(run).data)
