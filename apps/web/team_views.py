"""The Teams pages: create a team, add people by username or email, change roles, remove, leave.

Every rule is in apps.accounts.services (owners and admins manage; only owners change roles or
touch another owner or admin; a team keeps an owner); the views parse, call one service, and say
what happened or why not.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.accounts import services
from apps.accounts.models import Membership, Team, User


def _my_team(request: HttpRequest, team: str) -> Team:
    # Someone else's team looks exactly like a missing one.
    return get_object_or_404(
        Team.objects.filter(memberships__user=request.user).distinct(), slug=team
    )


@login_required
@require_GET
def teams_page(request: HttpRequest) -> HttpResponse:
    memberships = (
        Membership.objects.filter(user=request.user).select_related("team").order_by("team__name")
    )
    return render(request, "web/teams.html", {"nav": "presets", "memberships": memberships})


@login_required
@require_POST
def create_team(request: HttpRequest) -> HttpResponse:
    try:
        team = services.create_team_named(name=request.POST.get("name", ""), owner=request.user)
    except services.TeamError as exc:
        messages.error(request, str(exc))
        return redirect("web:teams")
    messages.success(
        request,
        f"Team “{team.name}” created: add people below; share presets with it on the Presets page.",
    )
    return redirect("web:team", team=team.slug)


@login_required
@require_GET
def team_page(request: HttpRequest, team: str) -> HttpResponse:
    team = _my_team(request, team)
    members = team.memberships.select_related("user").order_by("user__username")
    role = services.role_in(team, request.user)
    context = {
        "nav": "presets",
        "team": team,
        "members": members,
        "my_role": role,
        "manages": role in services.MANAGERS,
        "owns": role == Membership.Role.OWNER,
        "roles": Membership.Role.choices,
    }
    return render(request, "web/team.html", context)


def _act(request: HttpRequest, team_slug: str, action: Callable[[Team], str]) -> HttpResponse:
    team = _my_team(request, team_slug)
    try:
        messages.success(request, action(team))
    except services.TeamError as exc:
        messages.error(request, str(exc))
    if services.role_in(team, request.user) is None:
        return redirect("web:teams")
    return redirect("web:team", team=team.slug)


def _member(team: Team, user_id: str) -> User:
    user = User.objects.filter(
        pk=user_id if user_id.isdigit() else None, memberships__team=team
    ).first()
    if user is None:
        raise Http404("No such member.")
    return user


@login_required
@require_POST
def add_member(request: HttpRequest, team: str) -> HttpResponse:
    def add(team: Team) -> str:
        membership = services.invite_member(
            team=team, actor=request.user, who=request.POST.get("who", "")
        )
        return f"{membership.user.get_username()} is now a member of {team.name}."

    return _act(request, team, add)


@login_required
@require_POST
def remove_member(request: HttpRequest, team: str, user_id: str) -> HttpResponse:
    def remove(team: Team) -> str:
        user = _member(team, user_id)
        services.remove_member(team=team, actor=request.user, user=user)
        return (
            f"You left {team.name}."
            if user.pk == request.user.pk
            else f"{user.get_username()} left {team.name}."
        )

    return _act(request, team, remove)


@login_required
@require_POST
def set_role(request: HttpRequest, team: str, user_id: str) -> HttpResponse:
    def change(team: Team) -> str:
        membership = services.set_role(
            team=team,
            actor=request.user,
            user=_member(team, user_id),
            role=request.POST.get("role", ""),
        )
        return f"{membership.user.get_username()} is now {membership.role} of {team.name}."

    return _act(request, team, change)
