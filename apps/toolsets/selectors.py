"""Permission-scoped reads of endpoints and presets."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from apps.toolsets.models import Endpoint, Preset


def visible_endpoints(user) -> QuerySet[Endpoint]:
    """A user's endpoints are theirs alone (staff manage others' in the admin)."""
    return Endpoint.objects.filter(owner=user)


def visible_presets(user) -> QuerySet[Preset]:
    return Preset.objects.filter(
        Q(owner=user) | Q(visibility=Preset.Visibility.TEAM, team__memberships__user=user)
    ).distinct()
