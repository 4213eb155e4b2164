"""REST API: a user's access tokens and the teams they belong to."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.models import AccessToken, Team
from apps.accounts.serializers import (
    AccessTokenCreateSerializer,
    AccessTokenSerializer,
    CreatedAccessTokenSerializer,
    TeamSerializer,
)
from apps.accounts.services import (
    TokenTooBroad,
    create_access_token,
    create_team,
    revoke_access_token,
)


class AccessTokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Your access tokens. Create returns the raw token once; delete revokes it (the row stays)."""

    queryset = AccessToken.objects.none()
    serializer_class = AccessTokenSerializer
    filterset_fields = ["endpoint__slug"]

    def get_queryset(self) -> QuerySet[AccessToken]:
        return AccessToken.objects.filter(user=self.request.user).select_related("endpoint")

    @extend_schema(
        request=AccessTokenCreateSerializer, responses={201: CreatedAccessTokenSerializer}
    )
    def create(self, request: Request) -> Response:
        data = AccessTokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = self._own_endpoint(data.validated_data["endpoint"])
        issuer = request.auth if isinstance(request.auth, AccessToken) else None
        try:
            token, raw = create_access_token(
                user=request.user,
                name=data.validated_data["name"],
                endpoint=endpoint,
                scope=data.validated_data["scope"],
                expires_at=data.validated_data["expires_at"],
                issued_by=issuer,
            )
        except TokenTooBroad as exc:
            raise exceptions.PermissionDenied(str(exc)) from None
        except ValueError as exc:
            raise serializers.ValidationError({"scope": [str(exc)]}) from None
        token.token = raw
        return Response(CreatedAccessTokenSerializer(token).data, status=status.HTTP_201_CREATED)

    def _own_endpoint(self, slug: str | None):
        if slug is None:
            return None
        endpoint = self.request.user.endpoints.filter(slug=slug).first()
        if endpoint is None:
            raise serializers.ValidationError(
                {"endpoint": ["You have no endpoint with this slug."]}
            )
        return endpoint

    def perform_destroy(self, instance: AccessToken) -> None:
        revoke_access_token(token=instance)


class TeamViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Teams you belong to; creating one makes you its owner."""

    queryset = Team.objects.none()
    serializer_class = TeamSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Team]:
        return (
            Team.objects.filter(memberships__user=self.request.user)
            .prefetch_related("memberships__user")
            .order_by("name")
            .distinct()
        )

    def perform_create(self, serializer: TeamSerializer) -> None:
        serializer.instance = create_team(owner=self.request.user, **serializer.validated_data)
