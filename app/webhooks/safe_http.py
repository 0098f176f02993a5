"""An outbound HTTP client that cannot be pointed at the server's own network.

Every connection resolves the host itself, refuses the whole host if any of
its addresses is not a global unicast address (loopback, RFC 1918, link-local
and cloud metadata, CGNAT, unique-local, multicast, unspecified, reserved,
IPv4-mapped forms of these), and then connects to an address it checked, so
DNS cannot be rebound between the check and the connection. TLS still
verifies the certificate against the host name. Deployments that need a
private receiver list it explicitly (``DAYBOOK_WEBHOOK_ALLOW_PRIVATE``: IPs,
CIDRs, host names).

Redirects are never followed, proxies from the environment are ignored,
every phase has a timeout and the whole exchange a deadline, and at most
``max_body`` bytes of a response are read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

RESOLVE_TIMEOUT = 5.0
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]


class RefusedDestination(Exception):
    """The target resolves to an address this instance does not send to."""


@dataclass(frozen=True, slots=True)
class DestinationPolicy:
    """Which non-global destinations are allowed (none by default)."""

    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()
    hostnames: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str) -> DestinationPolicy:
        """``"127.0.0.1, 10.0.0.0/8, hooks.internal"``; ``ValueError`` naming a bad entry."""
        networks = []
        hostnames = set()
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            name = entry.lower().rstrip(".")
            labels = name.split(".")
            if not all(
                0 < len(label) <= 63 and label.replace("-", "").isalnum() and label.isascii()
                for label in labels
            ):
                raise ValueError(f"webhook private allowlist: {entry!r} is not an IP, CIDR or host")
            hostnames.add(name)
        return cls(tuple(networks), frozenset(hostnames))

    def allows(self, host: str, address: IPAddress) -> bool:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_global and not address.is_multicast:
            return True
        if host.lower().rstrip(".") in self.hostnames:
            return True
        return any(address in net for net in self.networks)


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return [str(info[4][0]) for info in infos]


async def checked_addresses(
    host: str, port: int, policy: DestinationPolicy, resolver: Resolver = system_resolver
) -> list[str]:
    """The host's addresses if every one is allowed; ``RefusedDestination`` otherwise."""
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
        found = [str(literal)]
    except ValueError:
        try:
            async with asyncio.timeout(RESOLVE_TIMEOUT):
                found = await resolver(host, port)
        except (OSError, ValueError, TimeoutError) as exc:  # ValueError: IDNA (UnicodeError)
            raise OSError(f"cannot resolve {host!r}: {exc or type(exc).__name__}") from None
    if not found:
        raise OSError(f"{host!r} has no addresses")
    for text in found:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if not policy.allows(host, address):
            raise RefusedDestination(
                f"{host!r} resolves to {address}, a private, loopback or link-local address"
            )
    return list(dict.fromkeys(found))


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses the policy allows."""

    def __init__(self, policy: DestinationPolicy, resolver: Resolver) -> None:
        self._inner = httpcore.AnyIOBackend()
        self._policy = policy
        self._resolver = resolver

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await checked_addresses(host, port, self._policy, self._resolver)
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None
        raise error

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise RefusedDestination("unix sockets are not a webhook destination")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, policy: DestinationPolicy, resolver: Resolver) -> None:
        super().__init__(retries=0)
        # httpx builds its pool without a network backend hook; same pool, guarded backend.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=16,
            max_keepalive_connections=0,
            http1=True,
            http2=False,
            network_backend=_GuardedBackend(policy, resolver),
        )


@dataclass(frozen=True, slots=True)
class Reply:
    status_code: int
    body: bytes  # at most max_body bytes
    elapsed_ms: int


async def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    policy: DestinationPolicy,
    deadline: float,
    max_body: int = 64 * 1024,
    resolver: Resolver = system_resolver,
) -> Reply:
    """POST once; ``RefusedDestination`` for a refused target, ``httpx.HTTPError``/
    ``OSError``/``TimeoutError`` for transport failures. Redirects are answers, not followed."""
    started = time.monotonic()
    transport = _GuardedTransport(policy, resolver)
    async with (
        asyncio.timeout(deadline),
        httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(deadline),
            follow_redirects=False,
            trust_env=False,
        ) as client,
        client.stream("POST", url, content=body, headers=headers) as response,
    ):
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_raw():
            chunks.append(chunk)
            size += len(chunk)
            if size >= max_body:
                break
        return Reply(
            response.status_code,
            b"".join(chunks)[:max_body],
            int((time.monotonic() - started) * 1000),
        )


def check_url(url: str) -> httpx.URL:
    """An absolute http(s) URL with a host, no credentials (400-worthy ``ValueError``)."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ValueError(f"not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"the scheme must be http or https, not {parsed.scheme!r}")
    if not parsed.host:
        raise ValueError("the URL has no host")
    if parsed.userinfo:
        raise ValueError("credentials in the URL are not allowed")
    return parsed
