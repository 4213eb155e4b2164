"""The sign-in lockout on a real hub, where every browser reaches the web server from 127.0.0.1 (as behind
a reverse proxy on the same host): a colleague's or a stranger's failures lock nobody else out; a
forged X-Forwarded-For is believed only when the operator says a proxy sets it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx2
import pytest
from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tests.live_hub import free_port, hub_env, start_web, stop, wait_healthy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def proxied_hub(django_db_setup, tmp_path_factory, healthy_needs) -> Iterator[str]:
    """A web process told that one reverse proxy in front appends to X-Forwarded-For."""
    port = free_port()
    env = hub_env(
        MCPHUB_DATA_DIR=str(tmp_path_factory.mktemp("proxied-data")), MCPHUB_TRUSTED_PROXIES="1"
    )
    process = start_web(port, env, tmp_path_factory.mktemp("proxied-logs"), name="proxied-web")
    try:
        wait_healthy(f"http://127.0.0.1:{port}", [process])
        yield f"http://127.0.0.1:{port}"
    finally:
        stop([process])


@pytest.fixture
def alice(alice):
    """Alice's password hashed as the hub checks it (the tests' fast MD5 hasher is not one it knows)."""
    alice.password = PBKDF2PasswordHasher().encode("alice-password", PBKDF2PasswordHasher().salt())
    alice.save(update_fields=["password"])
    return alice


def sign_in(base_url: str, username: str, password: str, forwarded_for: str | None = None) -> int:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    with httpx2.Client(base_url=base_url, headers=headers, timeout=30) as browser:
        page = browser.get("/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        return browser.post(
            "/login/",
            data={"csrfmiddlewaretoken": csrf, "username": username, "password": password},
        ).status_code


def test_nobody_behind_the_same_address_or_elsewhere_locks_alice_out(hub, alice, bob):
    for _ in range(settings.AXES_FAILURE_LIMIT * 2):
        sign_in(
            hub.base_url, "bob", "guess"
        )  # bob, on the same address as alice, forgot his password

    assert sign_in(hub.base_url, "alice", "alice-password") == 302


def test_a_forged_x_forwarded_for_neither_evades_a_lock_nor_moves_it(hub, alice):
    statuses = [
        sign_in(hub.base_url, "alice", "guess", forwarded_for=f"198.51.100.{n}")
        for n in range(settings.AXES_FAILURE_LIMIT)
    ]

    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    assert sign_in(hub.base_url, "alice", "alice-password", forwarded_for="192.0.2.1") == 429


def test_behind_a_trusted_proxy_each_client_address_has_its_own_lock(proxied_hub, alice):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(
            proxied_hub, "alice", "guess", forwarded_for="6.6.6.6, 203.0.113.50"
        )  # the proxy appended 203.0.113.50

    assert sign_in(proxied_hub, "alice", "alice-password", forwarded_for="203.0.113.50") == 429
    assert (
        sign_in(proxied_hub, "alice", "alice-password", forwarded_for="203.0.113.50, 198.51.100.20")
        == 302
    )
