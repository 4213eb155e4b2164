"""The sign-in page's providers: `{% load sso %}{% sso_sign_in as sso %}`."""

from __future__ import annotations

from django import template

from apps.accounts.sso import config

register = template.Library()


@register.simple_tag
def sso_sign_in() -> dict:
    return {
        "providers": [{"name": name, "url": url} for name, url in config.buttons()],
        "only": config.is_sso_only(),
    }
