"""The list's statements are built once per reader and shape (issue 15).

SQLAlchemy fingerprints a statement for its compiled cache by walking the
whole expression (``_generate_cache_key``), memoised on the statement
object. The page statement and the related-row statement carry the audience
predicate, so a fresh object per request cost several milliseconds of CPU
per list request just for the fingerprint. They are kept per reader
(user id and restriction), with the page's values bound as parameters. What
must hold: the kept statement is reused (the speed), and it is never another
reader's (the security), also when requests of different readers interleave.
"""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.memos import listing
from app.memos.listing import ListQuery, parse_order
from app.memos.present import related_statement
from tests.conftest import Actor, sign_up

ALICE = Caller(1, "alice", "ADMIN", Credential.ACCESS_TOKEN, session_id=1)
BOB = Caller(2, "bob", "USER", Credential.SESSION, session_id=2)


def _page(caller: Caller | None, after: list[Any] | None = None) -> Any:
    query = ListQuery(caller=caller, mode=AccessMode.PRIVATE, page_size=50)
    return listing._page_statement(query, parse_order(None), after)


def test_page_statement_is_kept_per_reader_and_shape() -> None:
    first, params = _page(ALICE)
    again, _ = _page(Caller(1, "alice", "ADMIN", Credential.SESSION, session_id=9))
    assert first is again  # same reader (user id, no restriction): one object
    assert params == {"page_limit": 51}
    assert _page(BOB)[0] is not first  # another reader: its own statement
    assert _page(None)[0] is not first
    paged, paged_params = _page(ALICE, [1_700_000_000, 7])
    assert paged is not first and paged is _page(ALICE, [1_600_000_000, 3])[0]
    assert paged_params == {"page_limit": 51, "after_0": 1_700_000_000, "after_1": 7}
    # The fingerprint is memoised on the kept object: the second one is free.
    assert first._generate_cache_key() is first._generate_cache_key()


def test_related_statement_is_kept_per_reader() -> None:
    a, a_params = related_statement([3, 1, 2], {1}, ALICE, AccessMode.PRIVATE)
    b, b_params = related_statement([9], {2, 1}, ALICE, AccessMode.PRIVATE)
    assert a is b
    assert a_params == {"page_ids": [3, 1, 2], "page_creators": [1]}
    assert b_params == {"page_ids": [9], "page_creators": [1, 2]}
    assert related_statement([9], {2}, BOB, AccessMode.PRIVATE)[0] is not a
    assert related_statement([9], {2}, ALICE, AccessMode.PUBLIC)[0] is not a


async def test_interleaved_readers_see_only_their_own(
    dialect: str, client: AsyncTestClient[Any]
) -> None:
    """Kept statements keep each reader's rule: alternating requests of two users,
    private memos with tags and a relation, never cross. (The statements are the
    same on both dialects, and every PostgreSQL list test runs them too.)"""
    if dialect != "sqlite":
        pytest.skip("dialect-independent: SQLite is enough")
    alice = await sign_up(client, "alice")
    bob = await sign_up(client, "bob", admin=alice)

    async def private(actor: Actor, text: str) -> dict[str, Any]:
        r = await actor.post("/api/v1/memos", json={"content": text, "visibility": "PRIVATE"})
        assert r.status_code == 200, r.text
        return dict(r.json())

    a1 = await private(alice, "alice one #a-tag")
    a2 = await private(alice, "alice two")
    b1 = await private(bob, "bob one #b-tag")
    r = await alice.patch(
        f"/api/v1/{a2['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": a1["name"]}, "type": "REFERENCE"}]},
    )
    assert r.status_code == 200, r.text
    for _ in range(3):
        for actor, mine, theirs in ((alice, {a1["name"], a2["name"]}, b1), (bob, {b1["name"]}, a1)):
            page = (await actor.get("/api/v1/memos", params={"pageSize": 1})).json()
            rest = (
                await actor.get(
                    "/api/v1/memos", params={"pageSize": 1, "pageToken": page["nextPageToken"]}
                )
            ).json()
            seen = page["memos"] + rest["memos"]
            assert {m["name"] for m in seen} == mine
            assert theirs["name"] not in {m["name"] for m in seen}
            tags = {t for m in seen for t in m["tags"]}
            assert tags == ({"a-tag"} if actor is alice else {"b-tag"})


def test_write_statements_are_kept_per_dialect_and_columns() -> None:
    """A write's INSERT and compare-and-swap UPDATE are built once per set of columns
    (they run under the write lock: issue 12); another set gets its own."""
    from app.memos import service

    update = service._cas_statement(("content", "updated_ts", "version"))
    assert update is service._cas_statement(("content", "updated_ts", "version"))
    assert update is not service._cas_statement(("pinned", "version"))
    insert = service._insert_statement("sqlite", ("uid", "content"))
    assert insert is service._insert_statement("sqlite", ("uid", "content"))
    assert insert is not service._insert_statement("postgresql", ("uid", "content"))
    # The values are bound, never baked in: one statement serves every memo.
    assert {p.key for p in update._get_embedded_bindparams()} >= {
        "cas_id",
        "cas_version",
        "hooks_owner",
        "v_content",
    }
