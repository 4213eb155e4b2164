from django.contrib import admin
from django.urls import include, path

from apps.core.views import favicon, health
from apps.web.metrics_views import metrics_view

admin.site.site_header = "MCP Hub administration"
admin.site.site_title = "MCP Hub"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("health", health, name="health"),
    # Browsers ask for /favicon.ico on any page without a <link rel=icon> (the API, the admin).
    path("favicon.ico", favicon),
    path("metrics", metrics_view, name="metrics"),
    path("api/", include("apps.api.urls")),
    path("sso/", include("apps.accounts.sso.urls")),  # sign-in with OpenID Connect providers
    path("", include("apps.oauth.urls")),
    path("", include("apps.web.urls")),
]

handler400 = "apps.web.errors.bad_request"
handler403 = "apps.web.errors.permission_denied"
handler404 = "apps.web.errors.page_not_found"
handler500 = "apps.web.errors.server_error"
