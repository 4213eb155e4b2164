"""Charlie (no staff rights) points a private provider at the hub's own network: the hub neither
lists its models nor sends it a chat turn, says the same thing whatever is there, and the server
behind the address never hears a byte. Staff's providers on loopback keep working."""

from __future__ import annotations

import ssl

import pytest
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from apps.core.outbound import REFUSED
from apps.llm import services
from apps.llm.adapters import base
from apps.llm.models import Provider
from apps.llm.types import LLMError
from tests.core.outbound_canary import Canary, closed_port, redirect_to
from tests.live_hub import make_tls_files
from tests.llm.conftest import HELLO

LOOPBACK_FORMS = ["127.0.0.1", "[::1]", "0.0.0.0", "[::ffff:127.0.0.1]", "localhost", "127.0.0.2"]


@pytest.fixture
def no_allowance(settings) -> None:
    settings.MCPHUB_OUTBOUND_ALLOW = []


@pytest.fixture
def canary():
    with Canary() as server:
        yield server


def _provider(owner, base_url: str, *, kind: str = "openai") -> Provider:
    # Saved without the save-time check, as a URL whose name resolved publicly when it was typed.
    return Provider.objects.create(
        name=f"p-{Provider.objects.count()}", kind=kind, base_url=base_url, owner=owner
    )


def _chat(provider: Provider) -> None:
    async def turn() -> None:
        async with services.adapter_for(provider, timeout=10) as adapter:
            async for _ in adapter.stream(model="m", messages=HELLO, tools=()):
                pass

    async_to_sync(turn)()


def _refusal(base_url: str) -> str:
    return f"Cannot reach the provider at {base_url}, also on a retry: {REFUSED}."


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_charlies_provider_on_loopback_is_neither_listed_nor_chatted_with(
    no_allowance, charlie, canary, host, kind
):
    provider = _provider(charlie, f"http://{host}:{canary.port}/v1", kind=kind)

    check = services.list_models(provider)
    with pytest.raises(LLMError) as chat:
        _chat(provider)

    assert not check.ok and check.models == [] and check.error == _refusal(provider.base_url)
    assert str(chat.value) == _refusal(provider.base_url)
    assert canary.heard == []


def test_every_failure_reads_the_same_so_ports_cannot_be_mapped(settings, charlie, canary):
    settings.MCPHUB_OUTBOUND_ALLOW = ["127.0.0.1"]
    urls = {
        "refused by the policy (something listens)": f"http://[::1]:{canary.port}/v1",
        "connection refused": f"http://127.0.0.1:{closed_port()}/v1",
        "no such host": "http://no-such-host.invalid/v1",
    }

    errors = {
        why: services.list_models(_provider(charlie, url)).error.replace(url, "URL")
        for why, url in urls.items()
    }

    assert set(errors.values()) == {_refusal("URL")}, errors
    assert canary.heard == []


def test_a_redirect_from_an_allowed_host_to_loopback_is_not_followed(settings, charlie, canary):
    settings.MCPHUB_OUTBOUND_ALLOW = ["localhost"]  # stands in for a public host
    with Canary(redirect_to(f"http://127.0.0.1:{canary.port}/v1/models")) as public:
        check = services.list_models(_provider(charlie, f"http://localhost:{public.port}/v1"))

    assert not check.ok and REFUSED in check.error
    assert public.heard and canary.heard == []


def test_staff_providers_on_loopback_still_work(no_allowance, dave, canary):
    shared = services.create_provider(
        actor=None,
        name="lm-studio",
        kind="openai",
        base_url=f"http://127.0.0.1:{canary.port}/v1",
        shared=True,
    )
    daves = _provider(dave, f"http://localhost:{canary.port}/v1")

    assert services.list_models(shared).models == ["internal-service-id"]
    assert services.list_models(daves).models == ["internal-service-id"]
    assert len(canary.heard) == 2


def test_saving_a_literal_internal_address_is_refused_with_a_reason(
    no_allowance, charlie, admin_user
):
    as_charlie, as_admin = APIClient(), APIClient()
    as_charlie.force_authenticate(charlie)
    as_admin.force_authenticate(admin_user)

    refused = [
        as_charlie.post(
            "/api/llm/providers/",
            {"name": f"n{i}", "kind": "openai", "base_url": url},
            format="json",
        )
        for i, url in enumerate(
            ["http://127.0.0.1:6379/v1", "http://localhost:11434/v1", "http://[::1]:5432/v1"]
        )
    ]
    public = as_charlie.post(
        "/api/llm/providers/",
        {"name": "openai", "kind": "openai", "base_url": "https://api.openai.com/v1"},
        format="json",
    )
    staff = as_admin.post(
        "/api/llm/providers/",
        {
            "name": "ollama",
            "kind": "openai",
            "base_url": "http://localhost:11434/v1",
            "shared": True,
        },
        format="json",
    )

    assert [r.status_code for r in refused] == [400, 400, 400]
    assert all("is not a public address" in r.json()["base_url"][0] for r in refused)
    assert public.status_code == 201 and staff.status_code == 201
    assert set(Provider.objects.values_list("name", flat=True)) == {"openai", "ollama"}


def test_a_users_https_provider_is_verified_by_its_name(settings, charlie, tmp_path, monkeypatch):
    # Connected to the address the policy checked, the certificate is still checked against the host name.
    settings.MCPHUB_OUTBOUND_ALLOW = ["localhost"]  # stands in for a public host
    files = make_tls_files(tmp_path, "provider", san="DNS:localhost")
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(files.cert, files.key)
    monkeypatch.setattr(
        base, "shared_ssl_context", lambda: ssl.create_default_context(cafile=str(files.ca))
    )

    with Canary(tls=served) as canary:
        check = services.list_models(_provider(charlie, f"https://localhost:{canary.port}/v1"))

    assert check.models == ["internal-service-id"], check.error
    assert [h.host for h in canary.heard] == [f"localhost:{canary.port}"]
