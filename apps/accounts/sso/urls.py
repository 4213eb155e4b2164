from django.urls import path

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
]
