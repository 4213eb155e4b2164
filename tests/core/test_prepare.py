"""`./hub run`'s start-up in one process (`mcp_prepare`), and the slow part beside the serving hub."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from apps.accounts.models import User
from apps.catalog.models import HUB_SERVER, McpServer
from tests.catalog.conftest import tiny_args
from tests.live_hub import ROOT, free_port, hub_env, stop, wait_healthy
from tests.waiting import eventually


def _prepare(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "mcp_prepare", *args],
        cwd=ROOT,
        env=hub_env(**env),
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_one_process_prepares_everything_and_says_when_an_admin_is_missing(
    transactional_db, tmp_path
):
    found = tmp_path / ".mcp.json"
    found.write_text(json.dumps({"mcpServers": {"tiny": {"command": "tiny-server"}}}))

    first = _prepare(MCP_JSON_PATH=str(found))

    assert first.returncode == 3, first.stdout + first.stderr  # ready, but nobody can sign in yet
    assert "Traceback" not in first.stderr, first.stderr
    assert McpServer.objects.filter(name="tiny", command="tiny-server").exists()
    assert McpServer.objects.get(name=HUB_SERVER).tools.exists()  # the hub's own tools
    User.objects.create_superuser("admin", "admin@example.com", "pw")
    McpServer.objects.filter(name="tiny").update(command="edited-in-the-hub")

    again = _prepare(MCP_JSON_PATH=str(found))

    assert again.returncode == 0, again.stdout + again.stderr
    # The found file is imported once: an edit made in the hub since is kept.
    assert McpServer.objects.get(name="tiny").command == "edited-in-the-hub"


def test_after_start_discovers_every_server_and_a_failure_does_not_stop_it(pool_host):
    McpServer.objects.create(name="tiny", command=sys.executable, args=tiny_args())
    McpServer.objects.create(name="broken", command="/nonexistent/mcp-server")

    result = _prepare("--after-start")

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output, output
    assert output.count("/nonexistent/mcp-server") == 1, output  # the table's failure, said once
    assert McpServer.objects.get(name="tiny").tools.exists()
    assert McpServer.objects.get(name="broken").status == McpServer.Status.DOWN


def _schema(path) -> dict[str, tuple]:
    """Each table's columns, indexes (SQLite's automatic ones by what they cover, not by their
    numbered names) and foreign keys; the migrations recorded; content types and permissions."""
    db = sqlite3.connect(path)
    tables = {}
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        columns = sorted(tuple(row[1:]) for row in db.execute(f'PRAGMA table_info("{table}")'))
        indexes = sorted(
            (
                "" if name.startswith("sqlite_autoindex") else name,
                unique,
                tuple(c[2] for c in db.execute(f'PRAGMA index_info("{name}")')),
            )
            for _, name, unique, *_ in db.execute(f'PRAGMA index_list("{table}")')
        )
        keys = sorted(tuple(row[2:5]) for row in db.execute(f'PRAGMA foreign_key_list("{table}")'))
        tables[table] = (columns, indexes, keys)
    for query in (
        "SELECT app, name FROM django_migrations",
        "SELECT app_label, model FROM django_content_type",
        "SELECT app_label, model, codename FROM auth_permission"
        " JOIN django_content_type ON django_content_type.id = content_type_id",
    ):
        tables[query] = sorted(db.execute(query))
    db.close()
    return tables


def test_a_new_sqlite_database_gets_the_schema_its_migrations_end_in(tmp_path):
    """The first start builds the schema from the models in one pass: the same tables, columns,
    indexes and keys as replaying every migration, with every migration recorded as applied."""
    built = {}
    for how, command in (("migrated", ["migrate"]), ("prepared", ["mcp_prepare"])):
        env = hub_env(embedded=True, MCPHUB_DATA_DIR=str(tmp_path / how))
        env.pop("DATABASE_URL")
        result = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert result.returncode in (0, 3), result.stdout + result.stderr
        built[how] = _schema(tmp_path / how / "mcphub.sqlite3")

    assert built["prepared"].keys() == built["migrated"].keys()
    for table, shape in built["migrated"].items():
        assert built["prepared"][table] == shape, table
    applied = built["prepared"]["SELECT app, name FROM django_migrations"]
    assert len(applied) > 100 and ("toolsets", "0001_initial") in applied


def test_serve_prepares_a_new_hub_creates_its_admin_serves_and_discovers_beside_it(tmp_path):
    """`./hub run`'s one process on a fresh embedded hub: prepared, the admin from the environment,
    served, and the found file's server discovered once the hub answers; SIGTERM stops it all."""
    found = tmp_path / ".mcp.json"
    tiny = {"command": sys.executable, "args": tiny_args()}
    found.write_text(json.dumps({"mcpServers": {"tiny": tiny}}))
    port = free_port()
    env = hub_env(
        embedded=True,
        MCPHUB_DATA_DIR=str(tmp_path / "data"),
        MCP_JSON_PATH=str(found),
        MCPHUB_ADMIN_USER="first-admin",
        MCPHUB_ADMIN_PASSWORD="a-long-admin-password",
    )
    env.pop("DATABASE_URL")
    log = open(tmp_path / "serve.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "manage.py", "mcp_prepare", "--serve", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    database = tmp_path / "data" / "mcphub.sqlite3"

    def discovered() -> bool:
        with contextlib.closing(sqlite3.connect(database)) as db:
            return bool(
                db.execute(
                    "SELECT count(*) FROM catalog_tool JOIN catalog_mcpserver"
                    " ON catalog_mcpserver.id = server_id WHERE catalog_mcpserver.name = 'tiny'"
                ).fetchone()[0]
            )

    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process], timeout=120)
        with contextlib.closing(sqlite3.connect(database)) as db:
            admins = db.execute("SELECT username FROM accounts_user WHERE is_superuser").fetchall()
        assert admins == [("first-admin",)]
        eventually(discovered, timeout=60, what="the found server discovered beside the hub")
    finally:
        stop([process])
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert process.returncode is not None
    assert f"serving on http://127.0.0.1:{port}/" in output, output
    assert "Traceback" not in output, output
    assert not _in_group(process.pid), "a process of the hub outlived it"


def _in_group(pgid: int) -> list[int]:
    """Live (not zombie) pids of a process group."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(stat.parent.name))
    return found
