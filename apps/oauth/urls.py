"""OAuth routes: the well-known documents at the site root, the endpoints under /oauth/."""

from django.urls import include, path, re_path
from oauth2_provider import views as dot

from apps.oauth import registration, views
from apps.oauth.cors import public_cors

app_name = "oauth2_provider"  # the toolkit reverses its own views in this namespace

oauth_patterns = [
    path(
        "authorize/", views.ConsentView.as_view(), name="authorize"
    ),  # a page: no cross-origin access
    path("token/", public_cors(views.JsonTokenView.as_view()), name="token"),
    path("revoke/", public_cors(dot.RevokeTokenView.as_view()), name="revoke-token"),
    path("register/", public_cors(registration.RegistrationView.as_view()), name="dcr-register"),
    path(
        "register/<str:client_id>/",
        registration.RegistrationManagementView.as_view(),
        name="dcr-register-management",
    ),
]

urlpatterns = [
    path(
        ".well-known/oauth-authorization-server",
        public_cors(dot.OAuthServerMetadataView.as_view()),
        name="oauth-server-metadata",
    ),
    re_path(
        r"^\.well-known/oauth-protected-resource/mcp/(?P<slug>[a-z0-9][a-z0-9-]{2,63})(?:/(?:sse)?)?$",
        public_cors(views.EndpointResourceMetadataView.as_view()),
        name="endpoint-resource-metadata",
    ),
    path("oauth/", include(oauth_patterns)),
]
