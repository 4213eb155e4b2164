from allauth.socialaccount.providers.github.provider import GitHubProvider
from allauth.socialaccount.providers.oauth2.urls import default_urlpatterns
from django.urls import include, path

from apps.accounts.sso import views

# The names are allauth's: its provider builds its login and callback URLs from them.
urlpatterns = [
    path("oidc/<str:provider_id>/login/", views.login, name="openid_connect_login"),
    path("oidc/<str:provider_id>/login/callback/", views.callback, name="openid_connect_callback"),
    path(
        "oidc/<str:provider_id>/backchannel-logout/",
        views.backchannel_logout,
        name="sso_backchannel_logout",
    ),
    # GitHub's OAuth app: /sso/github/login/ and /sso/github/login/callback/ (allauth's views).
    path("", include(default_urlpatterns(GitHubProvider))),
]
