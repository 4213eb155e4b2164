"""Numbers as people read them: durations in ms or s, rates in percent."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(ms: float | None) -> str:
    if ms is None:
        return "—"
    if ms >= 1000:
        return f"{ms / 1000:.1f} s" if ms < 10_000 else f"{ms / 1000:.0f} s"
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms"


@register.filter
def percent(rate: float) -> str:
    if rate == 0:
        return "0%"
    return f"{rate * 100:.1f}%" if rate < 0.1 else f"{rate * 100:.0f}%"
