"""The outbound address policy: where the hub may connect when a non-staff user or a backend chose
the target (a private LLM provider's base URL, a user's HTTP MCP server, the metadata and endpoints
an upstream OAuth backend names, a CIMD client's document, and every redirect from them).

Such a target passes only at a public address: loopback, private, link-local, unique-local, CGNAT,
cloud-metadata, multicast, unspecified and reserved ranges are refused, also when an IPv6 form
carries one of them (IPv4-mapped, NAT64, 6to4, Teredo). The check runs after DNS resolution, on
every request (redirects included), and the connection goes to the address that was checked: the
name is resolved once, here, and the request is sent to that IP with the name kept for the Host
header and TLS — a second lookup that answers differently (DNS rebinding) is never made.

Staff widen it with MCPHUB_OUTBOUND_ALLOW (hosts, `.domain` suffixes, networks). Targets staff chose
themselves (shared providers, staff-added servers) do not go through it at all.

Whatever stops a request under the policy — refused by it, no such host, connection refused, a
connect timeout — the caller sees one text, so the answers cannot map a network.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import httpx2
from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

REFUSED = (
    "Cannot connect: the host is unreachable from the hub or not at a public address "
    "(addresses on private networks need staff to allow them)"
)

_V4_BLOCKED = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network", the unspecified address
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",  # RFC 1918
        "100.64.0.0/10",  # CGNAT (also Alibaba's metadata 100.100.100.200)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local, cloud metadata 169.254.169.254
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",
        "198.51.100.0/24",
        "203.0.113.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relay anycast
        "198.18.0.0/15",  # benchmarking
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, broadcast
    )
)
# Only global unicast (2000::/3) can be public; inside it, these are not.
_V6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_V6_BLOCKED = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "2001::/23",  # IETF protocol assignments (Teredo, 2001::/32, is decoded before this check)
        "2001:db8::/32",
        "3fff::/20",  # documentation
    )
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the low 32 bits are an IPv4 address
_TEREDO = ipaddress.IPv6Network("2001::/32")
_SIXTOFOUR = ipaddress.IPv6Network("2002::/16")


class OutboundRefused(OSError):
    """The policy refused every address of a target, or it has none; str() is REFUSED."""

    def __init__(self) -> None:
        super().__init__(REFUSED)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...] | None:
    """The IPv4 addresses an IPv6 address stands for (mapped, NAT64, 6to4, Teredo), else None."""
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip in _NAT64:
        return (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF),)
    if ip in _SIXTOFOUR:
        return (ip.sixtofour,)  # type: ignore[return-value]
    if ip in _TEREDO:
        return ip.teredo  # type: ignore[return-value]  # (server, client): both must be public
    return None


def is_public(address: str | Address) -> bool:
    """Whether an address is one anybody on the internet could reach (see the module docstring)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = embedded_ipv4(ip.__class__(int(ip)))  # without a %scope
        if embedded is not None:
            return all(is_public(part) for part in embedded)
        return ip in _V6_GLOBAL_UNICAST and not any(ip in net for net in _V6_BLOCKED)
    return not any(ip in net for net in _V4_BLOCKED)


@dataclass(frozen=True)
class Allowances:
    """What staff allow beyond public addresses: exact hosts, `.domain` suffixes, networks."""

    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Allowances:
        hosts, suffixes, networks = set(), [], []
        for entry in (e.strip().lower().rstrip(".") for e in entries):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                if entry.startswith("."):
                    suffixes.append(entry)
                else:
                    hosts.add(entry)
        return cls(frozenset(hosts), tuple(suffixes), tuple(networks))

    def host(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        return name in self.hosts or any(name.endswith(s) or name == s[1:] for s in self.suffixes)

    def address(self, address: str) -> bool:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        mapped = getattr(ip, "ipv4_mapped", None)
        return any(ip in net or (mapped is not None and mapped in net) for net in self.networks)


@lru_cache(maxsize=4)
def _parsed(entries: tuple[str, ...]) -> Allowances:
    return Allowances.parse(entries)


def allowances() -> Allowances:
    """MCPHUB_OUTBOUND_ALLOW, read on each use (tests and operators may change settings)."""
    return _parsed(tuple(getattr(settings, "MCPHUB_OUTBOUND_ALLOW", ()) or ()))


def _bare(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Policy:
    """Which addresses one kind of request may reach: public ones, what staff allow, and `trusted`
    origins — (host, port) pairs staff chose, so a backend naming its own origin names no new target."""

    trusted: frozenset[tuple[str, int]] = frozenset()
    refused: ClassVar[str] = REFUSED

    def permits(self, host: str, port: int, address: str) -> bool:
        allowed = allowances()
        return (
            (host.lower(), port) in self.trusted
            or (not _is_literal(host) and allowed.host(host))
            or is_public(address)
            or allowed.address(address)
        )

    def addresses(self, host: str, port: int) -> list[str]:
        """The permitted addresses of host:port, resolved once (blocking); OutboundRefused if none."""
        host = _bare(host)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise OutboundRefused() from None
        return self._permitted(host, port, infos)

    async def aaddresses(self, host: str, port: int) -> list[str]:
        host = _bare(host)
        if _is_address(host):
            # No lookup to make: getaddrinfo would hand a literal back as it is, at the cost of a
            # round trip through a thread on every LLM request to a provider named by address.
            return self._permitted(host, port, [(None, None, None, "", (host, port))])
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except (OSError, UnicodeError):
            raise OutboundRefused() from None
        return self._permitted(host, port, infos)

    def _permitted(self, host: str, port: int, infos: list) -> list[str]:
        found = list(dict.fromkeys(str(info[4][0]) for info in infos))
        permitted = [address for address in found if self.permits(host, port, address)]
        if not permitted:
            raise OutboundRefused()
        return permitted

    def async_transport(self, inner: httpx2.AsyncBaseTransport) -> httpx2.AsyncBaseTransport:
        return GuardedAsyncTransport(inner, self)

    def sync_transport(self, inner: httpx2.BaseTransport) -> httpx2.BaseTransport:
        return GuardedTransport(inner, self)


PUBLIC_ONLY = Policy()


def trusting(url: str) -> Policy:
    """The policy for targets a backend at `url` names, when staff chose that backend: its own
    origin stays reachable (an authorization server on the backend itself), anything else is held
    to the policy."""
    parts = httpx2.URL(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Policy(trusted=frozenset({(parts.host.lower(), port)}))


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _origin(url: httpx2.URL) -> tuple[str, int]:
    # The ASCII form (punycode for an internationalised name): what DNS and TLS are given.
    return url.raw_host.decode("ascii"), url.port or (443 if url.scheme == "https" else 80)


def _at(request: httpx2.Request, address: str) -> httpx2.Request:
    """`request` sent to `address`: the Host header stays (it was set from the name), TLS checks the
    name. A request whose URL already names that address goes as it is: rebuilding it (URL, headers,
    body) cost ~36 µs of CPU on each request to an LLM or MCP server named by its address."""
    if request.url.host == address:
        return request
    url = request.url.copy_with(host=address)
    extensions = {**request.extensions, "sni_hostname": _origin(request.url)[0]}
    try:
        body = request.content
    except httpx2.RequestNotRead:  # a streaming body: hand the stream on
        return httpx2.Request(
            request.method,
            url,
            headers=request.headers,
            stream=request.stream,
            extensions=extensions,
        )
    return httpx2.Request(
        request.method, url, headers=request.headers, content=body, extensions=extensions
    )


class GuardedAsyncTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport that sends each request only to an address the policy permits."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, policy: Policy) -> None:
        self.inner = inner
        self.policy = policy

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        host, port = _origin(request.url)
        try:
            addresses = await self.policy.aaddresses(host, port)
        except OutboundRefused:
            addresses = []
        for address in addresses:
            try:
                return await self.inner.handle_async_request(_at(request, address))
            except (httpx2.ConnectError, httpx2.ConnectTimeout):
                continue
        # Raised outside any handler, so no cause chain carries the OS's words ("Connection refused").
        raise httpx2.ConnectError(REFUSED, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class GuardedTransport(httpx2.BaseTransport):
    """GuardedAsyncTransport for sync clients."""

    def __init__(self, inner: httpx2.BaseTransport, policy: Policy) -> None:
        self.inner = inner
        self.policy = policy

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        host, port = _origin(request.url)
        try:
            addresses = self.policy.addresses(host, port)
        except OutboundRefused:
            addresses = []
        for address in addresses:
            try:
                return self.inner.handle_request(_at(request, address))
            except (httpx2.ConnectError, httpx2.ConnectTimeout):
                continue
        raise httpx2.ConnectError(REFUSED, request=request)

    def close(self) -> None:
        self.inner.close()


def guarded_client(policy: Policy, **kwargs) -> httpx2.Client:
    """A sync httpx2 client under `policy`; environment proxies are not used (a proxy would make
    the connection the policy refused)."""
    transport = policy.sync_transport(
        httpx2.HTTPTransport(verify=kwargs.pop("verify", True))
    )  # SSL_CERT_FILE still read
    return httpx2.Client(transport=transport, trust_env=False, **kwargs)


def literal_problem(url: str) -> str | None:
    """Why a URL a non-staff user typed names a host the policy will refuse, when that shows
    without DNS (a literal private address, `localhost`); None otherwise. A cheap save-time check:
    the real one happens at connect time, since DNS answers change."""
    try:
        host = _bare(httpx2.URL(url).host).lower().rstrip(".")
    except httpx2.InvalidURL:
        return None  # the field's own validation says what is wrong
    allowed = allowances()
    if _is_literal(host):
        refused = not (is_public(host) or allowed.address(host))
    else:
        refused = (host == "localhost" or host.endswith(".localhost")) and not allowed.host(host)
    if not refused:
        return None
    return (
        f"{host} is not a public address: the hub connects only to public addresses for the servers "
        "and providers users add (staff can allow others with MCPHUB_OUTBOUND_ALLOW)."
    )
