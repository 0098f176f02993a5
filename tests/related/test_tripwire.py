"""The tripwire: seed canaries everywhere, read everything as everyone else, find none.

Three users each write PRIVATE memos, PROTECTED memos, comments, references,
attachments (canary filenames and bytes), reactions, tags and share links, each
marked with a unique canary string. Then every other caller (the other users,
anonymous on a PUBLIC instance, and restricted keys with each personal reach)
calls every read endpoint: memo list with and without filters and every page,
get, comments, relations, reactions, attachments list and get, files, stats,
RSS, shares. No response (body or headers) may contain a canary the caller is
not allowed to see. A token the caller itself put in the URL is not a leak.

Placed memos (decision 0030): alice's space, with bob a member and carol not,
holds a PRIVATE, a PROTECTED and a PUBLIC memo at a path whose name is itself
a canary. Each is read by its visibility (bob never reads alice's placed
PRIVATE memo), the path shows only to members with a grant there, and the
restricted keys, which declare no space, see none of them.

Positive control: each owner's own requests see every one of its canaries, so
the tripwire is known to be able to see what it looks for.
"""

from __future__ import annotations

import itertools
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor, sign_up
from tests.related.helpers import comment, make_public, restricted_key, upload
from tests.spaces.conftest import create_space, join

USERS = ("alice", "bob", "carol")


@dataclass(frozen=True)
class Canary:
    token: str
    owner: str
    kind: str  # "private": owner only; "protected": signed-in users; "public": everyone;
    # "members": the space's members with a grant at the path (the path's own name)
    required: bool = True  # must the owner see it (positive control)?
    placed: bool = False  # in a space no key of the tripwire declares


@dataclass(frozen=True)
class Caller:
    label: str
    headers: dict[str, str]
    user: str | None
    reach: str  # AUDIENCE | OWN | NONE (users: AUDIENCE)
    key: bool = False


@dataclass
class World:
    canaries: list[Canary] = field(default_factory=list)
    memos: list[str] = field(default_factory=list)  # every memo name, all users
    attachments: list[dict[str, Any]] = field(default_factory=list)
    shares: list[tuple[str, str | None]] = field(default_factory=list)  # (token, allowed canary)
    share_memos: list[str] = field(default_factory=list)

    def add(
        self,
        token: str,
        owner: str,
        kind: str = "private",
        required: bool = True,
        placed: bool = False,
    ) -> str:
        self.canaries.append(Canary(token, owner, kind, required, placed))
        return token


MEMBERS = ("alice", "bob")  # of alice's space, with a grant at `share` (carol is not in it)


def allowed(c: Canary, caller: Caller) -> bool:
    if c.placed and caller.key:
        return False  # the keys declare no space
    if c.kind == "members":
        return caller.user in MEMBERS
    if c.kind == "public" and caller.user is None:
        return True  # the instance is in PUBLIC mode
    if caller.user is None or caller.reach == "NONE":
        return False
    if c.kind == "public":
        return caller.reach == "AUDIENCE" or caller.user == c.owner
    if c.kind == "protected":
        return caller.reach == "AUDIENCE" or caller.user == c.owner
    return caller.user == c.owner


async def seed_space(actors: dict[str, Actor], world: World) -> None:
    """alice's space: placed memos of each personal visibility at a canary path."""
    alice, bob = actors["alice"], actors["bob"]
    space = (await create_space(alice, "Tripwire"))["name"]
    await join(alice, space, bob)
    path = world.add("cnrypath-alice", "alice", "members", placed=True)
    for owner, vis, kind in (
        ("alice", "PRIVATE", "private"),
        ("bob", "PROTECTED", "protected"),
        ("alice", "PUBLIC", "public"),
    ):
        text = world.add(f"CNRY-PLACED-{vis}-{owner}", owner, kind, placed=True)
        r = await actors[owner].post(
            "/api/v1/memos",
            json={"content": text, "visibility": vis, "space": space, "tree": f"share.{path}"},
        )
        assert r.status_code == 200, r.text
        world.memos.append(r.json()["name"])


async def seed(actors: dict[str, Actor], world: World) -> None:
    publics: dict[str, dict[str, Any]] = {}
    for u, actor in actors.items():
        publics[u] = await actor.memo(f"public memo of {u}", visibility="PUBLIC")
        world.memos.append(publics[u]["name"])
    for u, actor in actors.items():
        other = publics[USERS[(USERS.index(u) + 1) % 3]]
        tag = world.add(f"cnrytag-{u}-p", u)
        p_uid = world.add(f"p-{u}-cnryuid", u)
        r = await actor.post(
            f"/api/v1/memos?memoId={p_uid}",
            json={"content": f"{world.add(f'CNRY-P-{u}-x1', u)} #{tag}", "visibility": "PRIVATE"},
        )
        assert r.status_code == 200, r.text
        p = r.json()
        t = await actor.memo(
            f"{world.add(f'CNRY-T-{u}-x2', u, 'protected')} #{world.add(f'cnrytag-{u}-t', u, 'protected')}",
            visibility="PROTECTED",
        )
        archived = await actor.memo(
            world.add(f"CNRY-ARCH-{u}-x3", u), visibility="PUBLIC", state="ARCHIVED"
        )
        # Comments: private on the user's own public memo and on someone else's; protected.
        c1 = (await comment(actor, publics[u], world.add(f"CNRY-C1-{u}-x4", u))).json()
        c2 = (await comment(actor, other, world.add(f"CNRY-C2-{u}-x5", u))).json()
        c3 = (
            await comment(
                actor, other, world.add(f"CNRY-C3-{u}-x6", u, "protected"), visibility="PROTECTED"
            )
        ).json()
        # A PUBLIC comment on a PRIVATE memo: readable directly by everyone, by design.
        c4 = (
            await comment(actor, p, world.add(f"CNRY-C4-{u}-x7", u, "public"), visibility="PUBLIC")
        ).json()
        # The public memo references the private one (snippet must not travel).
        r = await actor.patch(
            f"/api/v1/{publics[u]['name']}/relations",
            json={
                "relations": [
                    {"relatedMemo": {"name": p["name"]}},
                    {"relatedMemo": {"name": t["name"]}},
                ]
            },
        )
        assert r.status_code == 200, r.text
        # Reactions carrying canaries.
        for memo, kind, label in ((p, "private", "p"), (t, "protected", "t")):
            r = await actor.post(
                f"/api/v1/{memo['name']}/reactions",
                json={
                    "reaction": {
                        "contentId": memo["name"],
                        "reactionType": world.add(f"cnryR-{u}-{label}", u, kind),
                    }
                },
            )
            assert r.status_code == 200, r.text
        # Attachments: bound to the private memo, to the protected memo, and unbound.
        for memo_name, kind, label in (
            (p["name"], "private", "p"),
            (t["name"], "protected", "t"),
            ("", "private", "loose"),
        ):
            fname = world.add(f"cnryfile-{u}-{label}.txt", u, kind)
            data = world.add(f"CNRYBYTES-{u}-{label}", u, kind).encode()
            extra = {"memo": memo_name} if memo_name else {}
            a = await upload(actor, fname, data, **extra)
            world.add(a["name"].split("/")[1], u, kind)
            world.attachments.append(a)
        # Shares: a live one (its memo is the only thing it shows), and a revoked one.
        s = await actor.memo(world.add(f"CNRY-SHARED-{u}-x8", u), visibility="PRIVATE")
        await actor.patch(
            f"/api/v1/{s['name']}/relations",
            json={"relations": [{"relatedMemo": {"name": p["name"]}}]},
        )
        await comment(actor, s, world.add(f"CNRY-SC-{u}-x9", u))
        live = (await actor.post(f"/api/v1/{s['name']}/shares", json={})).json()
        world.add(live["token"], u)
        world.shares.append((live["token"], f"CNRY-SHARED-{u}-x8"))
        gone_memo = await actor.memo(world.add(f"CNRY-REVOKED-{u}-xa", u), visibility="PRIVATE")
        gone = (await actor.post(f"/api/v1/{gone_memo['name']}/shares", json={})).json()
        assert (await actor.delete(f"/api/v1/{gone['name']}")).status_code == 200
        world.add(gone["token"], u, required=False)
        world.shares.append((gone["token"], None))
        world.share_memos += [s["name"], gone_memo["name"]]
        world.memos += [
            p["name"],
            t["name"],
            archived["name"],
            c1["name"],
            c2["name"],
            c3["name"],
            c4["name"],
            s["name"],
            gone_memo["name"],
        ]


def q(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def read_urls(world: World) -> list[str]:
    """Every read endpoint, for one caller (pagination is followed separately)."""
    urls: list[str] = []
    for name in world.memos:
        urls += [
            f"/api/v1/{name}",
            f"/api/v1/{name}/comments",
            f"/api/v1/{name}/relations",
            f"/api/v1/{name}/reactions",
            f"/api/v1/{name}/attachments",
        ]
    urls += [f"/api/v1/{name}/shares" for name in world.share_memos]
    for a in world.attachments:
        uid = a["name"].split("/")[1]
        urls += [
            f"/api/v1/{a['name']}",
            f"/file/attachments/{uid}",
            f"/file/attachments/{uid}/{q(a['filename'])}",
        ]
    for u in USERS:
        urls += [f"/api/v1/users/{u}:getStats", f"/api/v1/users/{u}", f"/u/{u}/rss.xml"]
    urls += ["/explore/rss.xml", f"/api/v1/memos:search?query={q('CNRY')}"]
    urls += [f"/api/v1/shares/{token}/memo" for token, _ in world.shares]
    return urls


LIST_QUERIES = (
    [
        "",
        "filter=" + q('content.contains("CNRY")'),
        "filter=" + q('visibility == "PRIVATE"'),
        "filter=" + q('visibility in ["PROTECTED", "PUBLIC"]'),
        "filter=" + q('tags.exists(t, t.startsWith("cnry"))'),
        "orderBy=" + q("update_time asc"),
        "state=ARCHIVED",
    ]
    + ["filter=" + q(f'creator == "users/{u}"') for u in USERS]
    + ["filter=" + q(f'"cnrytag-{u}-p" in tags') for u in USERS]
)
ATTACHMENT_QUERIES = [
    "",
    "filter=" + q("memo_id == null"),
    "filter=" + q('filename.contains("cnry")'),
    "filter=" + q('mime_type == "text/plain"'),
]


class Tripwire:
    def __init__(self, client: AsyncTestClient[Any], world: World) -> None:
        self.client, self.world = client, world
        self.requests = 0
        self.leaks: list[str] = []
        self.seen: set[str] = set()

    async def get(self, caller: Caller, url: str, extra_allowed: str | None = None) -> Any:
        r = await self.client.get(url, headers=caller.headers)
        self.requests += 1
        assert r.status_code < 500, (caller.label, url, r.status_code, r.text)
        haystack = (
            r.content.decode("utf-8", "replace")
            + "\n"
            + "\n".join(f"{k}: {v}" for k, v in r.headers.items())
        )
        sent = urllib.parse.unquote(url)
        for c in self.world.canaries:
            if c.token not in haystack:
                continue
            # The feeds read as anonymous whoever asks (app.feeds): a PUBLIC memo is
            # in them for a key too, as it is for the key's holder without the key.
            feed = url.endswith("rss.xml") and c.kind == "public"
            if allowed(c, caller) or feed or c.token == extra_allowed or c.token in sent:
                if caller.user == c.owner:
                    self.seen.add(c.token)
                continue
            self.leaks.append(f"{caller.label} GET {url} -> {r.status_code} leaked {c.token}")
        return r

    async def pages(self, caller: Caller, base: str, query: str, field: str) -> None:
        token = ""
        for _ in range(200):
            sep = "&" if query else ""
            url = f"{base}?pageSize=1&{query}{sep}pageToken={q(token)}"
            r = await self.get(caller, url)
            if r.status_code != 200:
                return
            assert field in r.json()
            token = r.json()["nextPageToken"]
            if not token:
                return
        raise AssertionError(f"{base}?{query}: pagination did not end")

    async def sweep(self, caller: Caller) -> None:
        for url in read_urls(self.world):
            share = next(
                (
                    allowed_c
                    for t, allowed_c in self.world.shares
                    if url == f"/api/v1/shares/{t}/memo"
                ),
                None,
            )
            await self.get(caller, url, extra_allowed=share)
        for query in LIST_QUERIES:
            await self.get(caller, f"/api/v1/memos?{query}")
            await self.pages(caller, "/api/v1/memos", query, "memos")
        for name in self.world.memos[:3]:  # the public memos carry the comments
            await self.pages(caller, f"/api/v1/{name}/comments", "", "memos")
            await self.pages(
                caller,
                f"/api/v1/{name}/comments",
                "filter=" + q('content.contains("CNRY")'),
                "memos",
            )
        for query in ATTACHMENT_QUERIES:
            await self.get(caller, f"/api/v1/attachments?{query}")
            await self.pages(caller, "/api/v1/attachments", query, "attachments")


async def test_tripwire_no_canary_reaches_anyone_else(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    await make_public(alice)
    actors = {"alice": alice}
    for u in USERS[1:]:
        actors[u] = await sign_up(client, u, admin=alice)
    world = World()
    await seed(actors, world)
    await seed_space(actors, world)
    callers = [Caller("anonymous", {}, None, "NONE")]
    for u, actor in actors.items():
        callers.append(Caller(u, actor.headers, u, "AUDIENCE"))
        for reach in ("NONE", "OWN", "AUDIENCE"):
            key = await restricted_key(actor, scope="READ", personal=reach)
            callers.append(Caller(f"{u}-key-{reach}", key, u, reach, key=True))
    wire = Tripwire(client, world)
    for caller in callers:
        await wire.sweep(caller)
    missing = {c.token for c in world.canaries if c.required} - wire.seen
    print(
        f"\ntripwire: {wire.requests} requests by {len(callers)} callers, "
        f"{len(world.canaries)} canaries, {len(wire.leaks)} leaks"
    )
    assert wire.leaks == [], "\n".join(wire.leaks[:60])
    assert missing == set(), f"positive control: owners never saw {sorted(missing)}"
    assert wire.requests >= 1000


def test_allowed_rule_table() -> None:
    """The tripwire's own oracle, pinned: keys with reach NONE and anonymous see no canary."""
    private, protected = Canary("x", "alice", "private"), Canary("y", "alice", "protected")
    for reach, user, want in itertools.product(
        ("NONE", "OWN", "AUDIENCE"), ("alice", "bob"), [None]
    ):
        caller = Caller("c", {}, user, reach)
        assert allowed(private, caller) == (reach != "NONE" and user == "alice"), (
            reach,
            user,
            want,
        )
        assert allowed(protected, caller) == (
            reach == "AUDIENCE" or (reach == "OWN" and user == "alice")
        )
    assert not allowed(protected, Caller("anon", {}, None, "NONE"))
