"""The importers' batched create (:mod:`app.memos.bulk`) writes what one-by-one creates write.

Both importers (``import-memos-db`` and the archive import) write a page of
top-level memos with :func:`insert_memos`. Each memo must come out exactly as
:func:`insert_memo` would have written it: the row and its derived columns,
tags in order, the rendering, one CREATE event, an outbox entry when its
creator has webhooks, and (triggers) the search index. A taken id must fail
the batch with a 409, not a 500.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from app.db.engine import create_engine
from app.db.schema import (
    memo,
    memo_event,
    memo_html,
    memo_tag,
    user_account,
    webhook,
    webhook_event,
)
from app.errors import AlreadyExists, InvalidArgument
from app.instance.store import AccessSettings
from app.memos.bulk import NewMemo, insert_memos, prerender_all
from app.memos.schemas import LocationIn, MemoIn
from app.memos.service import WriteContext, insert_memo, prepare_memo
from app.portability.access import local_caller
from tests.conftest import Actor

BODIES = [
    MemoIn(content="# Harbor walk\n\nsaw #boats and #birds, [a link](https://example.org)"),
    MemoIn(
        content="- [ ] buy rope #errands\n\n```\ncode\n```\n" + "long line. " * 40,
        visibility="PROTECTED",
        pinned=True,
        state="ARCHIVED",
        create_time="2021-03-04T05:06:07Z",
        update_time="2021-03-05T05:06:07Z",
        location=LocationIn(placeholder="Quay", latitude=51.5, longitude=-0.1),
    ),
    MemoIn(content="plain, no tags"),
]

SKIP = {"id", "uid", "memo_id"}


def _plain(row: Any) -> dict[str, Any]:
    return {k: v for k, v in row._mapping.items() if k not in SKIP}


async def _written(conn: Any, memo_id: int) -> dict[str, Any]:
    one = (await conn.execute(sa.select(memo).where(memo.c.id == memo_id))).one()
    tags = (
        await conn.execute(
            sa.select(memo_tag.c.tag, memo_tag.c.position)
            .where(memo_tag.c.memo_id == memo_id)
            .order_by(memo_tag.c.position)
        )
    ).all()
    html = (await conn.execute(sa.select(memo_html).where(memo_html.c.memo_id == memo_id))).all()
    events = (
        await conn.execute(sa.select(memo_event).where(memo_event.c.memo_id == memo_id))
    ).all()
    hooks = (
        await conn.execute(
            sa.select(webhook_event.c.activity).where(webhook_event.c.memo_id == memo_id)
        )
    ).all()
    return {
        "memo": _plain(one),
        "tags": [tuple(t) for t in tags],
        "html": [_plain(h) for h in html],
        "events": [_plain(e) for e in events],
        "hooks": [tuple(h) for h in hooks],
    }


async def test_batched_create_writes_what_one_by_one_writes(
    database_url: str, alice: Actor, bob: Actor
) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as conn:
            alice_id, bob_id = await _id(conn, "alice"), await _id(conn, "bob")
            await conn.execute(
                webhook.insert().values(
                    uid="hook1",
                    owner_id=bob_id,
                    url="https://hooks.example/x",
                    secret="whsec_x",
                    created_ts=0,
                    updated_ts=0,
                )
            )
            access = AccessSettings()
            ctxs = {
                uid: WriteContext(
                    local_caller(uid, name, "USER", "test-bulk"), access, 1_700_000_000
                )
                for uid, name in ((alice_id, "alice"), (bob_id, "bob"))
            }
            await prerender_all((str(b.content) for b in BODIES), access.content_length_limit)
            single, batch = [], []
            for i, body in enumerate(BODIES):
                for who in (alice_id, bob_id):
                    ctx = ctxs[who]
                    one = await prepare_memo(conn, ctx, body, f"one-{who}-{i}")
                    single.append(await insert_memo(conn, ctx, one))
                    batch.append(
                        NewMemo(ctx, await prepare_memo(conn, ctx, body, f"many-{who}-{i}"))
                    )
            ids = await insert_memos(conn, batch)
            assert len(set(ids)) == len(batch)
            uids = dict(
                (await conn.execute(sa.select(memo.c.id, memo.c.uid).where(memo.c.id.in_(ids))))
                .tuples()
                .all()
            )
            assert [uids[i] for i in ids] == [b.prepared.uid for b in batch]  # ids by uid
            for a, b in zip(single, ids, strict=True):
                assert await _written(conn, b) == await _written(conn, a)
            bob_hooks = [await _written(conn, i) for i in ids[1::2]]
            assert all(w["hooks"] == [("memos.memo.created",)] for w in bob_hooks)
            assert (await _written(conn, ids[0]))["tags"] == [("boats", 0), ("birds", 1)]

            again = await prepare_memo(conn, ctxs[alice_id], BODIES[2], f"one-{alice_id}-0")
            taken = NewMemo(ctxs[alice_id], again)
            with pytest.raises(InvalidArgument):
                await insert_memos(conn, [batch[0], batch[0]])
        async with engine.connect() as conn:  # rolled back: the failed statement aborts it
            with pytest.raises(AlreadyExists):
                await insert_memos(conn, [taken])
    finally:
        await engine.dispose()
    # The search index (triggers) has the batched memos as it has the single ones.
    r = await alice.get("/api/v1/memos:search", params={"query": "harbor walk", "mode": "lexical"})
    assert r.status_code == 200, r.text
    found = {hit["memo"]["name"] for hit in r.json()["results"]}
    assert {f"memos/one-{alice_id}-0", f"memos/many-{alice_id}-0"} <= found


async def _id(conn: Any, username: str) -> int:
    row = await conn.execute(
        sa.select(user_account.c.id).where(user_account.c.username == username)
    )
    return int(row.scalar_one())
