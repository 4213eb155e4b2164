"""Personas: alice owns things, bob is on alice's team, charlie must see nothing of alice's,
dave is staff without model permissions."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from django.conf import settings

from apps.accounts.models import Membership, User
from apps.accounts.services import add_member, create_access_token, create_team
from apps.catalog.models import McpServer, Tool
from tests.live_hub import (
    HubProcesses,
    free_port,
    hub_env,
    start_web,
    start_worker,
    stop,
    wait_for_pool_worker,
    wait_healthy,
)
from tests.waiting import eventually

TEST_PROCESS = "mcphub-tests"


def pytest_configure(config: pytest.Config) -> None:
    """The test process connects without the hub's connection pool (its hubs keep theirs).

    An async test reaches the ORM from threads of its event loop's executor; each takes a pooled
    connection that is never handed back when the loop and its threads go, so a few hundred such
    tests exhausted the 40 connections and every later test waited 20 s and failed. Without the
    pool a dead thread's connection is closed when the thread's locals are collected."""
    options = settings.DATABASES["default"].setdefault("OPTIONS", {})
    options.pop("pool", None)
    if "postgresql" in settings.DATABASES["default"]["ENGINE"]:
        # Tests that cut this process's connections (tests/toolsets/test_call_log_db_outage.py) find
        # them by name and leave the live hubs' alone.
        options["application_name"] = TEST_PROCESS


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", "alice@example.com", "alice-password")


@pytest.fixture
def bob(db) -> User:
    return User.objects.create_user("bob", "bob@example.com", "bob-password")


@pytest.fixture
def charlie(db) -> User:
    return User.objects.create_user("charlie", "charlie@example.com", "charlie-password")


@pytest.fixture
def dave(db) -> User:
    """Staff (may sign in to the admin) but holds no model permissions: staff alone grants nothing."""
    return User.objects.create_user("dave", "dave@example.com", "dave-password", is_staff=True)


@pytest.fixture
def admin_user(db) -> User:
    return User.objects.create_superuser("admin", "admin@example.com", "admin-password")


@pytest.fixture
def team(alice, bob):
    """Alice's team, with bob as a member; charlie is not on it."""
    team = create_team(name="Alice's team", slug="alices-team", owner=alice)
    add_member(team=team, user=bob, role=Membership.Role.MEMBER)
    return team


@pytest.fixture
def alice_token(alice) -> str:
    _, raw = create_access_token(user=alice, name="alice's laptop")
    return raw


@pytest.fixture
def charlie_token(charlie) -> str:
    _, raw = create_access_token(user=charlie, name="charlie's laptop")
    return raw


@pytest.fixture
def scrape_token(dave) -> str:
    """Dave is staff: his read-only API token is what a Prometheus scrape config would carry."""
    return create_access_token(user=dave, name="prometheus", scope="api_read")[1]


@pytest.fixture
def global_server(db) -> McpServer:
    return McpServer.objects.create(name="time", transport="stdio", command="mcp-server-time")


@pytest.fixture
def alice_private_server(alice) -> McpServer:
    return McpServer.objects.create(
        name="alice-notes",
        transport="streamable_http",
        url="https://notes.example.com/mcp",
        headers={"Authorization": "Bearer alice-secret-header"},
        visibility=McpServer.Visibility.PRIVATE,
        owner=alice,
    )


@pytest.fixture
def make_tool():
    def make(server: McpServer, name: str, tokens: int = 100) -> Tool:
        return Tool.objects.create(
            server=server,
            name=name,
            description=f"{name} tool",
            input_schema={"type": "object"},
            token_estimate=tokens,
        )

    return make


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    """PBKDF2's deliberate slowness costs ~0.4 s per persona; tests do not need it."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session", autouse=True)
def _redis_starts_empty() -> None:
    """With REDIS_URL, a session starts on an empty database, as on a fresh deployment: what an
    earlier session left there (an hour's client registrations per address, health baselines,
    queued tasks) would count in this one's tests."""
    if settings.REDIS_URL:
        from django.core.cache import cache

        cache.clear()  # the cache shares REDIS_URL's database with the hub's hot state and queues


@pytest.fixture(scope="session", autouse=True)
def _flush_outlives_a_deadlock_with_the_hub() -> Iterator[None]:
    """A transactional test's teardown empties every table in one TRUNCATE while the shared hub may
    still commit a test's last writes: the call log's periodic flush, up to 0.5 s after the test's
    last tool call, which nothing outside the hub process can see pending (its turns and runs are
    stopped before, `pytest_runtest_teardown`). A commit checks its foreign keys then, so the two
    can deadlock and Postgres aborts one: when it picks the TRUNCATE (seen once in CI), the flush is
    tried again instead of failing the test."""
    import time

    from django.db import OperationalError
    from django.db.backends.base.operations import BaseDatabaseOperations

    flush = BaseDatabaseOperations.execute_sql_flush

    def execute_sql_flush(self, sql_list):
        for attempt in range(1, 4):
            try:
                return flush(self, sql_list)
            except OperationalError as exc:
                if "deadlock detected" not in str(exc) or attempt == 3:
                    raise
                time.sleep(0.2)

    BaseDatabaseOperations.execute_sql_flush = execute_sql_flush
    yield
    BaseDatabaseOperations.execute_sql_flush = flush


@pytest.fixture(scope="session")
def hub(django_db_setup, tmp_path_factory) -> Iterator[HubProcesses]:
    """One web process (+ one pool worker when REDIS_URL is set) for the whole test session."""
    log_dir = tmp_path_factory.mktemp("hub-logs")
    port = free_port()
    env = hub_env(MCPHUB_DATA_DIR=str(tmp_path_factory.mktemp("hub-data")))
    # It shares the database with the private hubs fault tests break: their lost work is theirs.
    env["MCPHUB_RUN_TAKE_OVER"] = "false"
    processes = [start_web(port, env, log_dir)]
    if settings.REDIS_URL:
        processes.append(start_worker(env, log_dir))
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base_url, processes)
        if settings.REDIS_URL:
            wait_for_pool_worker()
        yield HubProcesses(base_url, processes, log_dir)
    finally:
        stop(processes)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """A live hub outlives each test. Before the fixtures of a test that used it end (its scripted
    LLM, its backends, its tables), stop the turns and runs it left going there and wait for them:
    they would call tools during the next test (its call counts, its backends) and write to
    emptied rows."""
    funcargs = getattr(item, "funcargs", {})  # what its setup got to (all of it, unless it failed)
    if funcargs.get("hub") is not None or funcargs.get("pool_host") is not None:
        stop_turns_and_runs()
    return (yield)


def stop_turns_and_runs() -> None:
    from apps.chat import services as chat_services
    from apps.chat.models import Turn
    from apps.chat.runs import services as run_services
    from apps.chat.runs.models import Run

    for run in Run.objects.filter(status__in=Run.ACTIVE):
        with contextlib.suppress(run_services.RunError):  # it may have finished meanwhile
            run_services.request_cancel(run=run)
    for turn in Turn.objects.filter(status=Turn.Status.RUNNING).select_related("conversation"):
        with contextlib.suppress(chat_services.ChatError):
            chat_services.request_stop(conversation=turn.conversation)
    eventually(
        lambda: (
            not (
                Run.objects.filter(status__in=Run.ACTIVE).exists()
                or Turn.objects.filter(status=Turn.Status.RUNNING).exists()
            )
        ),
        timeout=20,
        interval=0.1,
        what="the turns and runs the test left in the hub to stop",
    )


@pytest.fixture
def pool_host(request, transactional_db):
    """With REDIS_URL, the hub whose worker holds connections and runs tasks; embedded: nothing."""
    return request.getfixturevalue("hub") if settings.REDIS_URL else None
