"""Link previews: fetched server-side, never from private addresses unless allowed."""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.net import guarded
from app.server import create_app
from app.settings import Settings
from tests.conftest import Actor, sign_up
from tests.contract import pages


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with pages.serve() as p:
        yield p


@pytest.fixture
async def open_client(settings: Settings) -> AsyncIterator[AsyncTestClient[Any]]:
    allowed = dataclasses.replace(
        settings, link_preview_allow_private="localhost", link_preview_timeout=2.0
    )
    async with AsyncTestClient(app=create_app(allowed)) as c:
        yield c


async def test_private_addresses_are_refused_by_default(alice: Actor, port: int) -> None:
    for url in (
        f"http://127.0.0.1:{port}/",
        f"http://localhost:{port}/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "file:///etc/passwd",
        "http://user:pw@example.com/",
    ):
        r = await alice.get("/api/v1/memos/-/linkMetadata", params={"url": url})
        assert r.status_code == 400, (url, r.text)
    assert (await alice.client.get("/api/v1/memos/-/linkMetadata?url=x")).status_code == 401


async def test_allowed_host_is_fetched_within_bounds(open_client: Any, port: int) -> None:
    alice = await sign_up(open_client, "alice")
    base = f"http://localhost:{port}"
    r = await alice.get("/api/v1/memos/-/linkMetadata", params={"url": f"{base}/page"})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "url": f"{base}/page",
        "title": "OG & title",
        "description": "A description",
        "image": f"{base}/img.png",
    }
    huge = await alice.get("/api/v1/memos/-/linkMetadata", params={"url": f"{base}/huge"})
    assert huge.status_code == 200 and huge.json()["title"] == "OG & title"  # head read, rest cut
    slow = await alice.get("/api/v1/memos/-/linkMetadata", params={"url": f"{base}/slow"})
    assert slow.status_code == 504, slow.text
    image = await alice.get("/api/v1/memos/-/linkMetadata", params={"url": f"{base}/image"})
    assert image.status_code == 400
    # A redirect to an address the allowlist does not name is refused at connect time.
    hop = f"{base}/redirect?to=http://127.0.0.1:{port}/page"
    r = await alice.get("/api/v1/memos/-/linkMetadata", params={"url": hop})
    assert r.status_code == 400, r.text
    r = await alice.post(
        "/api/v1/memos/-/linkMetadata:batchGet",
        json={"urls": [f"{base}/page", f"http://127.0.0.1:{port}/page"]},
    )
    assert r.status_code == 200, r.text
    assert [m["title"] for m in r.json()["linkMetadata"]] == ["OG & title", ""]


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "0.0.0.0",
        "224.0.0.1",
    ],
)
async def test_checked_refuses_every_non_global_address(address: str) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34", address]  # one public, one private: the host is refused

    with pytest.raises(guarded.Refused):
        await guarded.checked("rebind.example", 80, guarded.Policy(), resolver)
    parsed = ipaddress.ip_address(address)
    mapped = parsed.ipv4_mapped if isinstance(parsed, ipaddress.IPv6Address) else None
    policy = guarded.Policy.parse(str(mapped or parsed))  # an operator's explicit allowance
    assert await guarded.checked("rebind.example", 80, policy, resolver)
