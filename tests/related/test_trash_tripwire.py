"""The tripwire, after the trash: seed canaries everywhere, trash every memo, find none.

The world of :mod:`tests.related.test_tripwire` (three users; PRIVATE,
PROTECTED, PUBLIC and archived memos, comments both ways, references,
reactions, attachments, tags, share links). Then every user DELETEs every
memo it may; each caller (anonymous on a PUBLIC instance, each user, a
restricted key) calls every read endpoint of the original tripwire. Now no
canary may reach anyone, **its owner included**, except the unbound
attachments (they belong to no memo) and tokens the caller itself put in
the URL. Positive control: each owner's trash view shows its own trashed
memos, and nobody else's.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor, sign_up
from tests.related.helpers import make_public, restricted_key
from tests.related.test_tripwire import USERS, Caller, Tripwire, World, seed


class TrashWire(Tripwire):
    def __init__(self, client: AsyncTestClient[Any], world: World, loose: set[str]) -> None:
        super().__init__(client, world)
        self.loose = loose

    async def get(self, caller: Caller, url: str, extra_allowed: str | None = None) -> Any:
        r = await self.client.get(url, headers=caller.headers)
        self.requests += 1
        assert r.status_code < 500, (caller.label, url, r.status_code, r.text)
        haystack = r.content.decode("utf-8", "replace") + "\n" + str(dict(r.headers))
        sent = urllib.parse.unquote(url)
        for c in self.world.canaries:
            if c.token not in haystack or c.token in sent:
                continue
            if c.token in self.loose and caller.user == c.owner and caller.reach != "NONE":
                continue
            self.leaks.append(f"{caller.label} GET {url} -> {r.status_code} leaked {c.token}")
        return r


async def test_no_trashed_canary_reaches_anyone_not_even_its_owner(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    await make_public(alice)
    actors = {"alice": alice}
    for u in USERS[1:]:
        actors[u] = await sign_up(client, u, admin=alice)
    world = World()
    await seed(actors, world)
    trashed = 0
    for actor in actors.values():
        for name in world.memos:
            r = await actor.delete(f"/api/v1/{name}")
            assert r.status_code in (200, 403, 404), r.text
            trashed += r.status_code == 200
    # 8 per user (public, private, protected, archived, its two comments on the next
    # user's public memo, the shared and the revoked memos; the comments on its own
    # memos went with them), except carol's comments on alice's public memo: alice's
    # DELETE already took them.
    assert trashed == 3 * 8 - 2
    loose: set[str] = set()
    for a in world.attachments:
        if not a.get("memo"):
            loose |= {a["name"].split("/")[1], a["filename"]}
            loose |= {c.token for c in world.canaries if c.token.endswith(f"{c.owner}-loose")}
    callers = [Caller("anonymous", {}, None, "NONE")]
    callers += [Caller(u, actor.headers, u, "AUDIENCE") for u, actor in actors.items()]
    key = await restricted_key(alice, scope="READ", personal="AUDIENCE")
    callers.append(Caller("alice-key-AUDIENCE", key, "alice", "AUDIENCE"))
    wire = TrashWire(client, world, loose)
    for caller in callers:
        await wire.sweep(caller)
    print(f"\ntrash tripwire: {wire.requests} requests, {len(wire.leaks)} leaks")
    assert wire.leaks == [], "\n".join(wire.leaks[:60])
    # Positive control: the owner's trash shows its own memos, and only its own.
    for u, actor in actors.items():
        r = await actor.get(f"/api/v1/users/{u}/trash?pageSize=1000")
        assert r.status_code == 200, r.text
        for label in ("P", "T", "ARCH", "SHARED", "REVOKED"):
            assert f"CNRY-{label}-{u}-" in r.text, (u, label)
        foreign = [c.token for c in world.canaries if c.owner != u and c.token in r.text]
        assert foreign == [], (u, foreign)
    assert wire.requests >= 500
