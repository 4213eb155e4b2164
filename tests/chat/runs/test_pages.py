"""The Runs pages as alice sees them, charlie sees nothing of hers, and a chat hands its task to a run."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.chat.models import Message
from apps.chat.runs.models import Run
from apps.chat.services import create_conversation

pytestmark = [pytest.mark.django_db(transaction=True)]


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice_run(alice, alice_provider, alice_endpoint) -> Run:
    return Run.objects.create(
        owner=alice,
        task="Alice's secret task",
        provider=alice_provider,
        endpoint=alice_endpoint,
        status=Run.Status.INTERRUPTED,
        rounds=3,
        max_rounds=10,
    )


def test_alice_sees_her_runs_with_progress(alice, alice_run):
    page = _client(alice).get("/runs/").content.decode()
    assert "Alice&#x27;s secret task" in page and 'value="3"' in page and "3 / 10" in page
    detail = _client(alice).get(f"/runs/{alice_run.pk}/").content.decode()
    assert "Resume" in detail and "Cancel" in detail
    assert 'id="run-progress"' not in detail  # a bar of rounds left is for a run that goes on
    Run.objects.filter(pk=alice_run.pk).update(status=Run.Status.RUNNING)
    detail = _client(alice).get(f"/runs/{alice_run.pk}/").content.decode()
    Run.objects.filter(pk=alice_run.pk).update(status=Run.Status.INTERRUPTED)  # no worker runs it
    assert '<progress id="run-progress" max="10" value="3"' in detail


def test_charlie_cannot_see_cancel_or_resume_alices_run(charlie, alice_run):
    client = _client(charlie)
    assert "secret" not in client.get("/runs/").content.decode()
    assert client.get(f"/runs/{alice_run.pk}/").status_code == 404
    assert client.post(f"/runs/{alice_run.pk}/cancel/").status_code == 404
    assert client.post(f"/runs/{alice_run.pk}/resume/").status_code == 404
    alice_run.refresh_from_db()
    assert alice_run.status == "interrupted"


def test_a_bad_start_says_why_and_starts_nothing(alice, alice_provider, alice_endpoint):
    response = _client(alice).post("/runs/start/", {"task": "x", "servers": "nope"}, follow=True)
    assert "nope" in response.content.decode()
    assert not Run.objects.exists()


def test_a_conversation_hands_its_task_to_a_run(alice, alice_provider, alice_endpoint, monkeypatch):
    monkeypatch.setattr(
        "apps.chat.runs.services._enqueue", lambda run_id: None
    )  # only the handover is under test
    conversation = create_conversation(owner=alice, model="big-model")
    Message.objects.create(conversation=conversation, role="user", text="Summarise the repo")
    response = _client(alice).post(f"/chat/{conversation.pk}/run/")
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert (run.task, run.model, run.endpoint_id, run.provider_id) == (
        "Summarise the repo",
        "big-model",
        alice_endpoint.pk,
        alice_provider.pk,
    )


def test_an_incomplete_run_shows_its_reasoning_collapsed_and_the_cut_and_may_be_resumed(
    alice, alice_run
):
    Run.objects.filter(pk=alice_run.pk).update(
        status=Run.Status.INCOMPLETE, answer="Half an", error="Cut."
    )
    alice_run.steps.create(
        round=1,
        text="Half an",
        reasoning="I <b>think</b>",
        finish_reason="length",
        replay={"message": {"reasoning_content": "secret-opaque"}},
    )
    detail = _client(alice).get(f"/runs/{alice_run.pk}/").content.decode()

    assert (
        '<details class="reasoning"><summary>Reasoning</summary><div class="reasoning-text">I &lt;b&gt;think&lt;/b&gt;</div></details>'
        in detail
    )
    assert "Cut at the model's output limit." in detail
    assert "Resume" in detail and "secret-opaque" not in detail
    assert "status-incomplete" in _client(alice).get("/runs/").content.decode()
