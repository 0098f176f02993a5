"""An outbound GET that cannot be aimed at the server's own network.

Link previews make the server fetch a URL a user typed, the textbook SSRF.
So every connection resolves the host itself and refuses it when any of its
addresses is not a global unicast address (loopback, RFC 1918, link-local
and cloud metadata, CGNAT, unique-local, multicast, unspecified, reserved,
IPv4-mapped forms of these), then connects to an address it checked: DNS
cannot rebind between the check and the connection, and TLS still verifies
the certificate against the host name. Redirects are followed by hand, at
most ``MAX_REDIRECTS``, each target checked again; environment proxies are
ignored; one deadline covers the whole exchange and at most ``max_bytes`` of
the body are read. An operator who wants previews of an intranet lists its
networks or hosts in ``DAYBOOK_LINK_PREVIEW_ALLOW_PRIVATE``.

(The webhooks branch carries the same connect-time check for POSTs; the two
can share one module once both are merged.)
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

Resolver = Callable[[str, int], Awaitable[list[str]]]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_REDIRECTS = 3


class Refused(Exception):
    """The URL or its destination is not one the server fetches."""


@dataclass(frozen=True, slots=True)
class Policy:
    """Non-global destinations that are allowed anyway (none by default)."""

    networks: tuple[Network, ...] = ()
    hostnames: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str) -> Policy:
        networks: list[Network] = []
        hosts: set[str] = set()
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(tuple(networks), frozenset(hosts))

    def allows(self, host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_global and not address.is_multicast:
            return True
        return host.lower().rstrip(".") in self.hostnames or any(
            address in net for net in self.networks
        )


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return [str(info[4][0]) for info in infos]


async def checked(host: str, port: int, policy: Policy, resolver: Resolver) -> list[str]:
    """Every address of ``host`` if all are allowed, else ``Refused``."""
    try:
        found = [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        try:
            found = await resolver(host, port)
        except OSError:
            raise Refused(f"cannot resolve {host!r}") from None
    if not found:
        raise Refused(f"{host!r} has no address")
    for text in found:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if not policy.allows(host, address):
            raise Refused(f"{host!r} is a private, loopback or link-local address")
    return list(dict.fromkeys(found))


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self, policy: Policy, resolver: Resolver) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._policy, self._resolver = policy, resolver

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        error: Exception | None = None
        for address in await checked(host, port, self._policy, self._resolver):
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise Refused("unix sockets are never fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _Transport(httpx.AsyncHTTPTransport):
    def __init__(self, policy: Policy, resolver: Resolver) -> None:
        super().__init__(retries=0)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=4,
            max_keepalive_connections=0,
            http1=True,
            http2=False,
            network_backend=_Backend(policy, resolver),
        )


def check_url(url: str) -> httpx.URL:
    """An absolute http(s) URL with a host and no credentials, or ``Refused``."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        raise Refused("not a URL") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise Refused("only absolute http and https URLs are fetched")
    if parsed.userinfo:
        raise Refused("credentials in the URL are not allowed")
    return parsed


@dataclass(frozen=True, slots=True)
class Page:
    url: str  # after redirects
    content_type: str
    body: bytes  # at most max_bytes


async def get(
    url: str,
    *,
    policy: Policy,
    deadline: float = 5.0,
    max_bytes: int = 512 * 1024,
    resolver: Resolver = system_resolver,
) -> Page:
    """GET ``url``; ``Refused``, ``TimeoutError`` or ``httpx.HTTPError`` on failure."""
    target = check_url(url)
    async with (
        asyncio.timeout(deadline),
        httpx.AsyncClient(
            transport=_Transport(policy, resolver),
            timeout=httpx.Timeout(deadline),
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": "Daybook link preview", "Accept": "text/html"},
        ) as client,
    ):
        for _ in range(MAX_REDIRECTS + 1):
            async with client.stream("GET", target) as response:
                if response.is_redirect and "location" in response.headers:
                    target = check_url(str(target.join(response.headers["location"])))
                    continue
                if response.status_code != 200:
                    raise Refused(f"the page answered HTTP {response.status_code}")
                chunks, size = [], 0
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size >= max_bytes:
                        break
                return Page(
                    str(target),
                    response.headers.get("content-type", ""),
                    b"".join(chunks)[:max_bytes],
                )
        raise Refused(f"more than {MAX_REDIRECTS} redirects")
