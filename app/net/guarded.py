"""Outbound HTTP that cannot be aimed at the server's own network.

Link previews fetch a URL a user typed and webhooks POST to one, the textbook
SSRF. So every connection resolves the host itself and refuses the whole host
when any of its addresses is not a global unicast address (loopback, RFC 1918,
link-local and cloud metadata, CGNAT, unique-local, multicast, unspecified,
reserved, IPv4-mapped forms of these), then connects to an address it checked:
DNS cannot rebind between the check and the connection, and TLS still verifies
the certificate against the host name. The check sits in httpcore's network
backend, below httpx, so it also covers every redirect hop.

What differs between callers is a ``Limits`` value: the deadline over the whole
exchange, how many body bytes are read, how many redirects are followed (each
target checked again; with none, a redirect is the answer), and the pool size.
Environment proxies are always ignored. An operator who needs a private
destination lists its networks or hosts in the caller's allowlist setting
(``DAYBOOK_LINK_PREVIEW_ALLOW_PRIVATE``, ``DAYBOOK_WEBHOOK_ALLOW_PRIVATE``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

Resolver = Callable[[str, int], Awaitable[list[str]]]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
RESOLVE_TIMEOUT = 5.0


class Refused(Exception):
    """The URL or its destination is not one the server sends requests to."""


class BadUrl(Refused):
    """Not an absolute http(s) URL with a host and without credentials."""


class Unresolvable(OSError):
    """The host has no address (or the lookup failed): a transport failure, not a refusal."""


@dataclass(frozen=True, slots=True)
class Policy:
    """Non-global destinations that are allowed anyway (none by default)."""

    networks: tuple[Network, ...] = ()
    hostnames: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str, *, setting: str = "allowlist") -> Policy:
        """``"127.0.0.1, 10.0.0.0/8, hooks.internal"``; ``ValueError`` naming a bad entry."""
        networks: list[Network] = []
        hostnames: set[str] = set()
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
            if not all(
                0 < len(label) <= 63 and label.replace("-", "").isalnum() and label.isascii()
                for label in name.split(".")
            ):
                raise ValueError(f"{setting}: {entry!r} is not an IP, CIDR or host")
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


@dataclass(frozen=True, slots=True)
class Limits:
    """One caller's bounds on an exchange."""

    deadline: float  # seconds, the whole exchange including every redirect hop
    max_bytes: int  # of the (last) response body; the rest is never read
    max_redirects: int = 0  # 0: a redirect is returned as the answer, not followed
    max_connections: int = 4


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return [str(info[4][0]) for info in infos]


async def checked(
    host: str, port: int, policy: Policy, resolver: Resolver = system_resolver
) -> list[str]:
    """Every address of ``host`` if all are allowed; ``Refused`` or ``Unresolvable`` otherwise."""
    try:
        found = [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        try:
            async with asyncio.timeout(RESOLVE_TIMEOUT):
                found = await resolver(host, port)
        except (OSError, ValueError, TimeoutError) as exc:  # ValueError: IDNA (UnicodeError)
            raise Unresolvable(f"cannot resolve {host!r}: {exc or type(exc).__name__}") from None
    if not found:
        raise Unresolvable(f"{host!r} has no addresses")
    for text in found:
        address = ipaddress.ip_address(text.split("%", 1)[0])
        if not policy.allows(host, address):
            raise Refused(
                f"{host!r} resolves to {address}, a private, loopback or link-local address"
            )
    return list(dict.fromkeys(found))


class _Backend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses the policy allows."""

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
        raise Refused("unix sockets are never a destination")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _Transport(httpx.AsyncHTTPTransport):
    def __init__(self, policy: Policy, resolver: Resolver, max_connections: int) -> None:
        super().__init__(retries=0)
        # httpx builds its pool without a network-backend hook: the same pool, guarded backend.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=max_connections,
            max_keepalive_connections=0,
            http1=True,
            http2=False,
            network_backend=_Backend(policy, resolver),
        )


def check_url(url: str) -> httpx.URL:
    """An absolute http(s) URL with a host and no credentials, or ``BadUrl``."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise BadUrl(f"not a URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise BadUrl(f"the scheme must be http or https, not {parsed.scheme!r}")
    if not parsed.host:
        raise BadUrl("the URL has no host")
    if parsed.userinfo:
        raise BadUrl("credentials in the URL are not allowed")
    return parsed


@dataclass(frozen=True, slots=True)
class Reply:
    status_code: int
    body: bytes  # at most Limits.max_bytes
    elapsed_ms: int
    url: str = ""  # after the redirects followed
    content_type: str = ""


async def request(
    method: str,
    url: str,
    *,
    policy: Policy,
    limits: Limits,
    content: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    resolver: Resolver = system_resolver,
) -> Reply:
    """One exchange; ``Refused`` for a refused URL or destination (or too many redirects),
    ``httpx.HTTPError``/``OSError``/``TimeoutError`` for transport failures."""
    started = time.monotonic()
    target = check_url(url)
    async with (
        asyncio.timeout(limits.deadline),
        httpx.AsyncClient(
            transport=_Transport(policy, resolver, limits.max_connections),
            timeout=httpx.Timeout(limits.deadline),
            follow_redirects=False,
            trust_env=False,
        ) as client,
    ):
        hop = 0
        while True:
            async with client.stream(
                method, target, content=content, headers=dict(headers or {})
            ) as response:
                location = response.headers.get("location")
                if limits.max_redirects and response.is_redirect and location is not None:
                    if hop >= limits.max_redirects:
                        raise Refused(f"more than {limits.max_redirects} redirects")
                    target = check_url(str(target.join(location)))
                    hop += 1
                    continue
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size >= limits.max_bytes:
                        break
                return Reply(
                    response.status_code,
                    b"".join(chunks)[: limits.max_bytes],
                    int((time.monotonic() - started) * 1000),
                    str(target),
                    response.headers.get("content-type", ""),
                )
