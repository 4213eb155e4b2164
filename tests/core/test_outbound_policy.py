"""The outbound address policy (apps/core/outbound.py): which addresses are public, what staff may
allow, and that a guarded client connects to the address it checked — once resolved, never again."""

from __future__ import annotations

import asyncio
import socket
import ssl

import httpx2
import pytest
from asgiref.sync import async_to_sync

from apps.connections.transports.http1 import Http1Client, HttpError
from apps.core import outbound
from apps.core.outbound import PUBLIC_ONLY, REFUSED, Allowances, Policy, is_public, literal_problem
from tests.core.outbound_canary import Canary, closed_port, redirect_to
from tests.live_hub import make_tls_files

NOT_PUBLIC = [
    # IPv4: each range at its edges
    "0.0.0.0",
    "0.255.255.255",
    "10.0.0.0",
    "10.255.255.255",
    "100.64.0.0",
    "100.127.255.255",
    "100.100.100.200",
    "127.0.0.1",
    "127.255.255.254",
    "169.254.0.1",
    "169.254.169.254",
    "172.16.0.0",
    "172.31.255.255",
    "192.0.0.8",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.0.1",
    "192.168.255.255",
    "198.18.0.0",
    "198.19.255.255",
    "198.51.100.7",
    "203.0.113.9",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    # IPv6
    "::",
    "::1",
    "fe80::1",
    "febf:ffff::1",
    "fe80::1%lo",
    "fc00::1",
    "fd00:ec2::254",
    "fdff::1",
    "ff02::1",
    "ff0e::1",
    "2001:db8::1",
    "3fff::1",
    "2001:2::1",
    "100::1",
    "::127.0.0.1",
    # IPv6 forms of internal IPv4 addresses
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "64:ff9b::7f00:1",
    "64:ff9b::a9fe:a9fe",
    "2002:7f00:1::",
    "2002:a00:1::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo for 192.0.2.45
    # not addresses at all
    "localhost",
    "",
    "256.1.1.1",
]
PUBLIC = [
    "1.1.1.1",
    "8.8.8.8",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "169.253.255.255",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo: server 65.54.227.120, client 8.8.8.8
]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_internal_and_special_addresses_are_not_public(address):
    assert not is_public(address)


@pytest.mark.parametrize("address", PUBLIC)
def test_internet_addresses_are_public(address):
    assert is_public(address)


def test_staff_allowances_name_hosts_domains_and_networks():
    allowed = Allowances.parse(
        ["ollama", ".corp.example", "10.0.0.0/8", "[fd12::1]", "127.0.0.1", " "]
    )

    assert allowed.host("ollama") and allowed.host("OLLAMA.") and not allowed.host("ollama2")
    assert (
        allowed.host("llm.corp.example")
        and allowed.host("corp.example")
        and not allowed.host("evilcorp.example")
    )
    assert (
        allowed.address("10.1.2.3")
        and allowed.address("::ffff:10.1.2.3")
        and allowed.address("fd12::1")
    )
    assert (
        allowed.address("127.0.0.1")
        and not allowed.address("127.0.0.2")
        and not allowed.address("11.0.0.1")
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:1234/v1",
        "http://[::1]:8080/mcp",
        "http://0.0.0.0/",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost:11434/v1",
        "http://LOCALHOST./v1",
        "http://db.localhost/",
        "http://169.254.169.254/latest",
        "http://10.0.0.5/mcp",
    ],
)
def test_a_literal_internal_host_is_refused_when_typed(url, settings):
    settings.MCPHUB_OUTBOUND_ALLOW = []

    assert "is not a public address" in literal_problem(url)


def test_public_names_and_allowed_hosts_pass_the_save_time_check(settings):
    settings.MCPHUB_OUTBOUND_ALLOW = ["localhost", "10.0.0.0/8"]

    for url in (
        "https://api.openai.com/v1",
        "http://ollama:11434/v1",
        "http://localhost:11434/v1",
        "http://10.0.0.5/mcp",
    ):
        assert literal_problem(url) is None


def test_a_name_resolving_to_loopback_is_refused_at_connect_time(settings):
    settings.MCPHUB_OUTBOUND_ALLOW = []
    with Canary() as canary:
        with outbound.guarded_client(PUBLIC_ONLY) as http:
            with pytest.raises(httpx2.ConnectError) as caught:
                http.get(f"http://localhost:{canary.port}/v1/models")

    assert str(caught.value) == REFUSED
    assert (
        caught.value.__cause__ is None and caught.value.__context__ is None
    )  # no OS words underneath
    assert canary.heard == []


def test_every_failure_under_the_policy_reads_the_same(settings):
    settings.MCPHUB_OUTBOUND_ALLOW = ["127.0.0.1"]
    texts = set()
    with Canary() as canary:
        for url in (
            f"http://[::1]:{canary.port}/",  # refused by the policy, although something listens there
            f"http://127.0.0.1:{closed_port()}/",  # allowed, connection refused
            "http://no-such-host.invalid/",  # no such host
        ):
            with (
                outbound.guarded_client(PUBLIC_ONLY, timeout=5) as http,
                pytest.raises(httpx2.ConnectError) as caught,
            ):
                http.get(url)
            texts.add(str(caught.value))

    assert texts == {REFUSED}
    assert canary.heard == []


def test_the_connection_goes_to_the_checked_address_not_a_second_answer(settings, monkeypatch):
    # DNS rebinding: the first answer passes the check, a later one names an internal address.
    settings.MCPHUB_OUTBOUND_ALLOW = ["127.0.0.2"]
    answers = iter(["127.0.0.2", "127.0.0.1", "127.0.0.1"])
    real = socket.getaddrinfo

    def rebinding(host, port, *args, **kwargs):
        if host == "rebind.test":
            return real(next(answers), port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with Canary() as canary:
        with outbound.guarded_client(PUBLIC_ONLY) as http:
            answered = http.get(f"http://rebind.test:{canary.port}/v1/models")

    assert answered.status_code == 200
    assert len(canary.heard) == 1
    assert (
        canary.heard[0].host == f"rebind.test:{canary.port}"
    )  # the name travels in Host, the address was checked
    assert next(answers) == "127.0.0.1"  # resolved exactly once


def test_a_redirect_from_an_allowed_host_to_an_internal_one_is_refused(settings):
    settings.MCPHUB_OUTBOUND_ALLOW = ["localhost"]  # stands in for a public host
    with Canary() as internal, Canary() as public:
        public.answer = redirect_to(f"http://127.0.0.1:{internal.port}/v1/models")
        with outbound.guarded_client(PUBLIC_ONLY, follow_redirects=True) as http:
            with pytest.raises(httpx2.ConnectError) as caught:
                http.get(f"http://localhost:{public.port}/v1/models")

    assert str(caught.value) == REFUSED
    assert len(public.heard) == 1 and internal.heard == []


def test_a_trusted_origin_is_reachable_and_nothing_else_on_its_host(settings):
    settings.MCPHUB_OUTBOUND_ALLOW = []
    with Canary() as backend, Canary() as neighbour:
        policy: Policy = outbound.trusting(f"http://[::1]:{backend.port}/mcp")
        with outbound.guarded_client(policy) as http:
            assert (
                http.get(
                    f"http://[::1]:{backend.port}/.well-known/oauth-protected-resource"
                ).status_code
                == 200
            )
            with pytest.raises(httpx2.ConnectError):
                http.get(f"http://[::1]:{neighbour.port}/")

    assert len(backend.heard) == 1 and neighbour.heard == []


@pytest.mark.parametrize("allowed", [[], ["localhost"]])
def test_the_lean_http_client_connects_only_where_the_policy_permits(settings, allowed):
    # The plain-POST path of MCP calls (connections/transports/http1.py), used after the SDK's handshake.
    settings.MCPHUB_OUTBOUND_ALLOW = allowed

    async def post(url: str) -> int:
        client = Http1Client(url, {}, guard=PUBLIC_ONLY)
        try:
            response = await client.post(b"{}", {"content-type": "application/json"})
            await response.aread()
            await response.aclose()
            return response.status_code
        finally:
            client.close()

    with Canary() as canary:
        if allowed:
            assert async_to_sync(post)(f"http://localhost:{canary.port}/mcp") == 200
            assert [h.host for h in canary.heard] == [f"localhost:{canary.port}"]
        else:
            with pytest.raises(HttpError) as caught:
                async_to_sync(post)(f"http://localhost:{canary.port}/mcp")
            assert str(caught.value) == REFUSED and canary.heard == []


def test_https_checks_the_certificate_against_the_name_while_connecting_to_the_checked_address(
    settings, tmp_path
):
    # A public HTTPS provider's certificate names its host, never the address: TLS must be given the name.
    settings.MCPHUB_OUTBOUND_ALLOW = ["localhost"]
    files = make_tls_files(tmp_path, "provider", san="DNS:localhost")
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(files.cert, files.key)
    trusted = ssl.create_default_context(cafile=str(files.ca))

    with Canary(tls=served) as canary:
        with outbound.guarded_client(PUBLIC_ONLY, verify=trusted) as http:
            answered = http.get(f"https://localhost:{canary.port}/v1/models")

    assert answered.status_code == 200 and answered.json()["data"][0]["id"] == "internal-service-id"
    assert [h.host for h in canary.heard] == [f"localhost:{canary.port}"]


@pytest.mark.anyio
async def test_an_address_typed_as_such_is_checked_without_a_lookup(settings, monkeypatch):
    # An LLM provider named by address (LM Studio at 192.168.x.y) is asked on every round: no
    # thread is spent resolving what needs no resolving, and the policy holds all the same.
    settings.MCPHUB_OUTBOUND_ALLOW = ["127.0.0.2"]

    async def no_lookup(*args, **kwargs):
        raise AssertionError("looked up an address")

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", no_lookup)

    assert await PUBLIC_ONLY.aaddresses("127.0.0.2", 80) == ["127.0.0.2"]
    assert await PUBLIC_ONLY.aaddresses("[::ffff:8.8.8.8]", 443) == ["::ffff:8.8.8.8"]
    for refused in ("127.0.0.1", "[::1]", "10.0.0.5", "169.254.169.254"):
        with pytest.raises(outbound.OutboundRefused):
            await PUBLIC_ONLY.aaddresses(refused, 80)
