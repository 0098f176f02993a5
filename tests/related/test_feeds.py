"""RSS: PUBLIC memos only, PUBLIC instances only, escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.related.helpers import comment, make_public


async def test_feeds_404_on_private_instance(client: AsyncTestClient[Any], alice: Actor) -> None:
    await alice.memo("pub", visibility="PUBLIC")
    assert (await client.get("/explore/rss.xml")).status_code == 404
    assert (await client.get("/u/alice/rss.xml")).status_code == 404
    assert (await alice.get("/explore/rss.xml")).status_code == 404


async def test_feeds_public_only_and_escaped(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    await make_public(alice)
    pub = await alice.memo("# Title <b>&amp; \x01 ]]> </description><x>", visibility="PUBLIC")
    await alice.memo("team only", visibility="PROTECTED")
    await alice.memo("diary", visibility="PRIVATE")
    await alice.memo("archived public", visibility="PUBLIC", state="ARCHIVED")
    await comment(alice, pub, "public comment", visibility="PUBLIC")
    bobs = await bob.memo("bob public", visibility="PUBLIC")
    for who in (client, alice):
        r = await who.get("/explore/rss.xml")
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/rss+xml")
        doc = ET.fromstring(r.content)
        items = doc.findall("./channel/item")
        links = [i.findtext("link") or "" for i in items]
        assert [link.rsplit("/", 1)[1] for link in links] == [
            bobs["name"].split("/")[1],
            pub["name"].split("/")[1],
        ]
        assert "team only" not in r.text and "diary" not in r.text and "archived" not in r.text
        assert "public comment" not in r.text
        assert items[1].findtext("description") == "# Title <b>&amp;  ]]> </description><x>"
    r = await client.get("/u/alice/rss.xml")
    assert len(ET.fromstring(r.content).findall("./channel/item")) == 1
    assert (await client.get("/u/nobody/rss.xml")).status_code == 404


async def test_feed_is_capped_at_50(client: AsyncTestClient[Any], alice: Actor) -> None:
    await make_public(alice)
    for i in range(52):
        await alice.memo(f"m{i}", visibility="PUBLIC")
    doc = ET.fromstring((await client.get("/explore/rss.xml")).content)
    items = doc.findall("./channel/item")
    assert len(items) == 50 and items[0].findtext("description") == "m51"
