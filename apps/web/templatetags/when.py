"""Times as people say them on the pages."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

register = template.Library()


@register.filter
def ago(moment: datetime | None) -> str:
    """ "just now" for the last minute (Django's timesince says "0 minutes"), else "5 minutes ago"."""
    if moment is None:
        return "never"
    if timezone.now() - moment < timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"
