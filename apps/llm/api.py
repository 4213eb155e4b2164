"""REST API for LLM providers: everyone lists shared + own; writes go through services.py.

Alice's private provider is invisible to charlie (404); only staff create or change shared ones.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.llm import selectors, services
from apps.llm.models import Provider
from apps.llm.serializers import ModelListSerializer, ProviderSerializer


def _as_api_error(exc: DjangoValidationError) -> exceptions.ValidationError:
    return exceptions.ValidationError(
        exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
    )


class ProviderViewSet(viewsets.ModelViewSet):
    queryset = Provider.objects.none()
    serializer_class = ProviderSerializer

    def get_queryset(self) -> QuerySet[Provider]:
        return selectors.providers_for(self.request.user).select_related("owner")

    def perform_create(self, serializer: ProviderSerializer) -> None:
        data = dict(serializer.validated_data)
        try:
            serializer.instance = services.create_provider(actor=self.request.user, **data)
        except DjangoValidationError as exc:
            raise _as_api_error(exc) from None

    def perform_update(self, serializer: ProviderSerializer) -> None:
        data = dict(serializer.validated_data)
        data.pop("shared", None)
        api_key = data.pop("api_key", None)
        try:
            services.update_provider(
                actor=self.request.user, provider=serializer.instance, api_key=api_key, **data
            )
        except DjangoValidationError as exc:
            raise _as_api_error(exc) from None

    def perform_destroy(self, provider: Provider) -> None:
        services.delete_provider(actor=self.request.user, provider=provider)

    @extend_schema(responses=ModelListSerializer)
    @action(detail=True, methods=["get"])
    def models(self, request: Request, pk: str) -> Response:
        """The models the provider serves, asked live (doubles as "test connection")."""
        provider = self.get_object()
        check = services.list_models(provider)
        return Response(
            ModelListSerializer(
                {
                    "ok": check.ok,
                    "models": check.models,
                    "default_model": provider.default_model,
                    "error": check.error,
                    "error_kind": check.kind,
                }
            ).data
        )
