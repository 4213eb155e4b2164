"""Everything under /api/: one router for the resources, plus the OpenAPI schema and its docs page."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from apps.accounts.api import AccessTokenViewSet, TeamViewSet
from apps.catalog.api import ServerViewSet
from apps.chat.api import ConversationViewSet
from apps.chat.runs.api import RunViewSet
from apps.credentials.api import MyCredentialsView
from apps.credentials.upstream.api import MyOAuthView
from apps.discovery.api import PatternsView, PatternView, SuggestView
from apps.llm.api import ProviderViewSet
from apps.toolsets.api import EndpointViewSet, ToolViewSet
from apps.toolsets.calllog.api import UsageViewSet
from apps.toolsets.preset_api import PresetViewSet

router = DefaultRouter()
router.register("servers", ServerViewSet, basename="server")
router.register("tools", ToolViewSet, basename="tool")
router.register("endpoints", EndpointViewSet, basename="endpoint")
router.register("presets", PresetViewSet, basename="preset")
router.register("tokens", AccessTokenViewSet, basename="token")
router.register("teams", TeamViewSet, basename="team")
router.register("usage", UsageViewSet, basename="usage")
router.register("conversations", ConversationViewSet, basename="conversation")
router.register("runs", RunViewSet, basename="run")
router.register("llm/providers", ProviderViewSet, basename="llm-provider")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file: the CSP allows no inline scripts.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path(
        "servers/<str:name>/my-credentials/",
        MyCredentialsView.as_view(),
        name="server-my-credentials",
    ),
    path("endpoints/<slug:slug>/suggest/", SuggestView.as_view(), name="endpoint-suggest"),
    path("endpoints/<slug:slug>/patterns/", PatternsView.as_view(), name="endpoint-patterns"),
    path(
        "endpoints/<slug:slug>/patterns/<int:pk>/", PatternView.as_view(), name="endpoint-pattern"
    ),
    path("servers/<str:name>/my-oauth/", MyOAuthView.as_view(), name="server-my-oauth"),
    path("", include(router.urls)),
]
