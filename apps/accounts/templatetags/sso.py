"""The sign-in page's providers: `{% load sso %}{% sso_sign_in as sso %}`."""

from __future__ import annotations

from django import template
from django.urls import reverse

from apps.accounts.sso import config

register = template.Library()


@register.simple_tag
def sso_sign_in() -> dict:
    return {
        "providers": [
            {
                "name": p.name,
                "url": reverse("openid_connect_login", kwargs={"provider_id": p.slug}),
            }
            for p in config.providers()
        ],
        "only": config.is_sso_only(),
    }
