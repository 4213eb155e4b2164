"""Sign-in cannot be guessed at full speed: failures lock the account and the address, with a clear
message; an admin unlocks. Pages carry the security headers a Django deployment should send."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


def sign_in(client: Client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_failed_sign_ins_lock_the_account_until_an_admin_unlocks_it(client, alice, admin_user):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in(client, "alice", "guess").status_code == 200  # the form again, with its error
    locked = sign_in(client, "alice", "guess")

    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    assert "ask an administrator to unlock it" in locked.content.decode()
    # now even the right password, from another address, is refused: the account is locked
    assert sign_in(Client(), "alice", "alice-password", address="198.51.100.2").status_code == 429

    admin = Client()
    admin.force_login(admin_user)
    attempts = list(AccessAttempt.objects.filter(username="alice").values_list("pk", flat=True))
    unlocked = admin.post("/admin/axes/accessattempt/", {"action": "delete_selected", "_selected_action": attempts, "post": "yes"})
    assert unlocked.status_code == 302

    assert sign_in(Client(), "alice", "alice-password", address="198.51.100.2").status_code == 302


def test_one_address_guessing_many_accounts_is_locked_too(client, alice, bob, charlie):
    names = ["alice", "bob", "charlie", "nobody", "admin"]
    for name in names[: settings.AXES_FAILURE_LIMIT]:
        sign_in(client, name, "guess", address="192.0.2.9")

    assert sign_in(client, "alice", "alice-password", address="192.0.2.9").status_code == 429
    assert sign_in(Client(), "bob", "bob-password", address="192.0.2.10").status_code == 302


def test_pages_send_a_strict_content_security_policy_and_refuse_framing(client, alice):
    client.force_login(alice)

    response = client.get("/")

    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "'unsafe-eval'" not in policy
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_no_page_template_carries_an_inline_script_or_handler():
    offenders = []
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        for needle in ("onclick=", "onchange=", "onsubmit=", "oninput=", "javascript:"):
            if needle in text:
                offenders.append(f"{template.relative_to(ROOT)}: {needle}")
        offenders += [f"{template.relative_to(ROOT)}: inline <script>" for line in text.splitlines()
                      if "<script" in line and "src=" not in line and 'type="application/json"' not in line]
    assert offenders == []


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
        "SECRET_KEY": "a-long-random-production-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        "MCPHUB_DEBUG": "false", "SITE_URL": "https://hub.example.com", "ALLOWED_HOSTS": "hub.example.com",
        "MCPHUB_DATA_DIR": str(tmp_path), "MCPHUB_ENV_FILE": str(tmp_path / "none.env"),
    }
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
