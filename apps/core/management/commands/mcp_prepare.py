"""Everything `./hub run` does before serving, in one process; the slow rest after it serves.

Each `manage.py` process spends ~1.5 s (quiet machine) to 3–6 s (loaded) importing Django and the
apps before doing anything: start-up ran six of them in a row (migrate, collectstatic, the found
`.mcp.json`, discovery, the hub's own tools, looking for a local LLM server), 23 s for a warm restart
of the embedded default. Here the quick steps run in this one process (`call_command`, by name: the
commands belong to the apps above core), and `--after-start` runs the slow ones — connecting to
every server, probing local LLM ports — beside the serving hub, which picks their results up as
from any other process (the catalog's change counters).

A new SQLite database (the embedded default's first start) gets its schema from the models in
one pass, as Django's test runner builds one with MIGRATE=False, and every migration is recorded as
applied: replaying the 111 migrations (ours and the installed apps') re-renders the model states
after each of their ~200 field changes. Measured (`time`, a new database, bytecode cached): this
command took 7.5–7.8 s of CPU with `migrate`, 1.9–2.0 s with the one pass. Only for an empty
database: the data migrations change rows that do not exist yet, `makemigrations --check` (CI)
keeps models and migrations saying the same, and tests/core/test_prepare.py compares the two
schemas table by table. Postgres always migrates.

`--serve HOST:PORT` (what `./hub run` does) then creates the first admin if none exists
(MCPHUB_ADMIN_USER / MCPHUB_ADMIN_PASSWORD, else asked on a terminal) and serves the hub
(mcphub/server.py: uvicorn) in this same process, with `--after-start` started beside it once the
port answers: two more processes (createsuperuser, the server) each importing Django again, and
the discovery's imports competing with the server's for the CPU, made a first start ~4 s longer.

Exit status: 0 ready; 3 ready, but no admin user exists yet (the launcher then asks for one).
"""

from __future__ import annotations

import contextvars
import io
import os
import socket
import subprocess
import sys
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

NO_ADMIN = 3


class Command(BaseCommand):
    # Loading every URL conf and view for the system checks costs ~1 s more; `./hub manage check`
    # (run by CI) is where they are looked at.
    requires_system_checks: list[str] = []
    help = "Prepare the hub to serve (migrate, static files, found .mcp.json, built-in tools); --after-start: discover servers and look for a local LLM."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--sync",
            action="store_true",
            help="The found .mcp.json wins over changes made in the hub (as mcp_import --sync).",
        )
        parser.add_argument(
            "--after-start",
            action="store_true",
            help="The slow part, beside a serving hub: discover every enabled server, then look for a local LLM server.",
        )
        parser.add_argument(
            "--serve",
            metavar="HOST:PORT",
            help="Then make sure an admin exists and serve the hub (uvicorn) in this process, --after-start beside it.",
        )

    def handle(self, *args, sync: bool, after_start: bool, serve: str | None, **options) -> None:
        if after_start:
            self._after_start()
            return
        migrate()
        call_command("collectstatic", interactive=False, verbosity=0)
        found = ["--if-found", "--no-discover"] + (["--sync"] if sync else [])
        call_command("mcp_import", *found, verbosity=0)
        call_command("mcp_hub_tools", verbosity=0, stdout=io.StringIO())
        from django.contrib.auth import get_user_model

        has_admin = get_user_model().objects.filter(is_superuser=True).exists()
        if serve:
            if not has_admin:
                self._create_admin()
            self._serve(serve)
        elif not has_admin:
            raise SystemExit(NO_ADMIN)

    def _create_admin(self) -> None:
        user, password = (
            os.environ.get("MCPHUB_ADMIN_USER"),
            os.environ.get("MCPHUB_ADMIN_PASSWORD"),
        )
        if user and password:
            os.environ["DJANGO_SUPERUSER_PASSWORD"] = password
            email = os.environ.get("MCPHUB_ADMIN_EMAIL", "admin@localhost")
            call_command("createsuperuser", interactive=False, username=user, email=email)
            self.stderr.write(f"created admin user {user}")
        elif sys.stdin.isatty():
            self.stderr.write("no admin user yet: create one now")
            call_command("createsuperuser")
        else:
            self.stderr.write(
                "no admin user yet: run './hub manage createsuperuser' "
                "(or set MCPHUB_ADMIN_USER and MCPHUB_ADMIN_PASSWORD)"
            )

    def _serve(self, address: str) -> None:
        from django.db import connections
        from django.utils.module_loading import import_string

        # By name, as a server names the ASGI app it loads: the project package sits above the apps.
        serve = import_string("mcphub.server.serve")

        host, _, port = address.rpartition(":")
        connections.close_all()  # the server's threads open their own
        self.stderr.write(f"[hub] serving on http://{host}:{port}/ (admin at /admin/)")
        threading.Thread(
            target=_after_start_once_serving, args=(host, int(port)), daemon=True
        ).start()
        # A context of its own: requests must not inherit this command's audit source.
        contextvars.Context().run(serve, host, int(port))

    def _after_start(self) -> None:
        try:
            call_command("mcp_discover")  # its table says which servers failed and why
        except SystemExit:  # a server failed: reported in the table; go on
            pass
        try:
            call_command("mcp_llm", "detect", "--if-none")
        except Exception as exc:  # noqa: BLE001 - a probe failing must not look like the hub failing
            self.stderr.write(f"could not look for a local LLM server: {exc}")


def migrate() -> None:
    from django.db import connection

    if connection.vendor == "sqlite" and not connection.introspection.table_names():
        modules = settings.MIGRATION_MODULES
        settings.MIGRATION_MODULES = _NoMigrations()  # read by the loader each time it is built
        try:
            call_command("migrate", run_syncdb=True, interactive=False, verbosity=0)
        finally:
            settings.MIGRATION_MODULES = modules
        call_command("migrate", fake=True, interactive=False, verbosity=0)
    else:
        call_command("migrate", interactive=False, verbosity=0)


class _NoMigrations:
    """MIGRATION_MODULES saying "no migrations" for every app (as Django's test runner does)."""

    def __contains__(self, app_label: str) -> bool:
        return True

    def __getitem__(self, app_label: str) -> None:
        return None


def _after_start_once_serving(host: str, port: int) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
        except OSError:
            time.sleep(0.1)
            continue
        manage = [sys.executable, sys.argv[0], "mcp_prepare", "--after-start"]
        subprocess.run(manage, check=False)  # this thread then ends, the server goes on
        return
