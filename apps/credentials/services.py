"""Writes of per-user credentials: save (merge) and remove, each followed by a reconnect of that
user's connection only."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import transaction

from apps.catalog import tasks, uservars
from apps.catalog.models import McpServer
from apps.catalog.permissions import may_write_server
from apps.connections.specs import pool_key
from apps.credentials.errors import CredentialsInvalid
from apps.credentials.models import UserCredential
from apps.credentials.selectors import partition_for
from apps.credentials.signals import credentials_changed


@transaction.atomic
def save_credentials(
    *, user, server: McpServer, values: Mapping[str, str | None]
) -> UserCredential | None:
    """Set the given variables for `user` (others keep their values); None or '' clears one.

    Raises `CredentialsInvalid` (nothing changed) for an unknown name or an unusable value.
    Returns the row, or None when no value is left (the row is removed).
    """
    declared = {v.name for v in server.user_variable_list()}
    _check(values, declared)
    row = UserCredential.objects.select_for_update().filter(user=user, server=server).first()
    merged = dict(row.values) if row is not None else {}
    for name, value in values.items():
        if value:
            merged[name] = value
        else:
            merged.pop(name, None)
    merged = {name: value for name, value in merged.items() if name in declared}
    if not merged:
        _remove(user, server, row)
        return None
    row = row or UserCredential(user=user, server=server)
    row.values, row.names = merged, sorted(merged)
    row.save()
    _changed(user, server)
    return row


def _check(values: Mapping[str, str | None], declared: set[str]) -> None:
    if not declared:
        raise CredentialsInvalid({"values": "this server has no user variables to fill"})
    if not isinstance(values, Mapping) or not values:
        raise CredentialsInvalid(
            {"values": 'send an object of names to values, e.g. {"GITHUB_TOKEN": "…"}'}
        )
    errors = {}
    for name, value in values.items():
        if name not in declared:
            errors[str(name)] = (
                f"not a variable of this server (it has: {', '.join(sorted(declared))})"
            )
        elif value is not None and (problem := uservars.value_problem(value)):
            errors[name] = problem
    if errors:
        raise CredentialsInvalid(errors)


@transaction.atomic
def delete_credentials(*, user, server: McpServer) -> bool:
    """Remove all of `user`'s values for `server`; False if there were none."""
    row = UserCredential.objects.select_for_update().filter(user=user, server=server).first()
    return _remove(user, server, row)


def _remove(user, server: McpServer, row: UserCredential | None) -> bool:
    if row is None:
        return False
    row.delete()
    _changed(user, server)
    # Nothing may run on them any more: stop the user's backend now rather than when it idles out.
    tasks.request_close(server_name=pool_key(server.name, partition_for(user.pk)))
    return True


def _changed(user, server: McpServer) -> None:
    """The user's views rebuild with the new spec; its new config_hash makes the pool replace only
    this user's connection at their next call (the old one drains; closing it here could hit the
    new one a quick call already opened). A staff user's first values discover a never-discovered server."""
    credentials_changed.send(sender=UserCredential, user_id=user.pk, server_id=server.pk)
    if server.enabled and server.last_ok_at is None and may_write_server(user, server):
        tasks.request_discovery(server_ids=[server.pk], user_id=user.pk)
