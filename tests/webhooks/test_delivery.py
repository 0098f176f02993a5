"""Delivery from the outbox: signed, Memos-shaped, retried, and only what the owner may read.

The worker is driven step by step (``run_once``) so each test decides what
happens between the write and the delivery; one test runs the real
background worker of the app's lifespan.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from app.access.audience import AccessMode
from app.access.caller import Caller, Credential
from app.db.schema import user_account, webhook_event
from app.db.transactions import write_transaction
from app.instance.store import AccessSettings
from app.memos.schemas import MemoIn
from app.memos.service import WriteContext, create_memo
from app.server import create_app
from app.settings import Settings
from app.webhooks.delivery import Policy, claim, run_once
from tests.conftest import Actor, sign_up
from tests.spaces.conftest import create_space, join
from tests.webhooks.conftest import Receiver, add_webhook, policy_of


async def events(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as conn:
        return list(
            (await conn.execute(sa.select(webhook_event).order_by(webhook_event.c.id))).all()
        )


async def drain(engine: AsyncEngine, policy: Policy, until: float = 10.0) -> list[str]:
    """Run the worker until nothing is pending (or ``until`` seconds passed)."""
    done: list[str] = []
    deadline = time.monotonic() + until
    while time.monotonic() < deadline:
        done += [s for s in await run_once(engine, policy)]
        if all(e.state != "PENDING" for e in await events(engine)):
            return done
        await asyncio.sleep(0.02)
    return done


async def deliveries(actor: Actor, hook: dict[str, Any]) -> list[dict[str, Any]]:
    r = await actor.get(f"/api/v1/{hook['name']}/deliveries")
    assert r.status_code == 200, r.text
    return list(r.json()["deliveries"])


async def test_memo_events_arrive_signed_in_memos_shape(
    engine: AsyncEngine, settings: Settings, alice: Actor, bob: Actor, receiver: Receiver
) -> None:
    hook, secret = await add_webhook(alice, receiver.url)
    memo = await alice.memo("first #tag", visibility="PROTECTED")
    r = await alice.patch(f"/api/v1/{memo['name']}", json={"content": "edited #tag"})
    assert r.status_code == 200, r.text
    comment = await bob.post(
        f"/api/v1/{memo['name']}/comments", json={"content": "nice", "visibility": "PROTECTED"}
    )
    assert comment.status_code == 200, comment.text
    assert (await alice.delete(f"/api/v1/{memo['name']}")).status_code == 200
    assert await drain(engine, policy_of(settings)) == ["DELIVERED"] * 4

    bodies = receiver.verified(secret)  # every signature checks (standardwebhooks)
    by_activity = {b["activityType"]: b for b in bodies}  # sent concurrently: any order
    assert sorted(by_activity) == [
        "memos.memo.comment.created",
        "memos.memo.created",
        "memos.memo.deleted",
        "memos.memo.updated",
    ]
    created, updated, commented, deleted = (
        by_activity[f"memos.memo.{a}"] for a in ("created", "updated", "comment.created", "deleted")
    )
    assert created["url"] == receiver.url and created["creator"] == "users/alice"
    m = created["memo"]
    # Go's encoding/json of Memos' protobuf struct: snake_case, enums as numbers,
    # timestamps as {seconds}, zero values omitted.
    assert m["name"] == memo["name"] and m["visibility"] == 2 and m["state"] == 1
    assert m["tags"] == ["tag"] and set(m["create_time"]) == {"seconds"}
    assert "pinned" not in m and "createTime" not in m
    assert m["content"] == "first #tag"  # the memo as of the event
    assert updated["memo"]["content"] == "edited #tag"
    assert commented["creator"] == "users/bob"
    assert commented["memo"]["parent"] == memo["name"]
    assert deleted["memo"]["name"] == memo["name"]
    assert deleted["memo"]["content"] == "edited #tag"
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert len(set(ids)) == 4 and all(i.startswith("msg_") for i in ids)

    log = await deliveries(alice, hook)
    assert [(d["outcome"], d["attempt"], d["statusCode"]) for d in log] == [
        ("DELIVERED", 1, 200)
    ] * 4
    assert {d["webhookId"] for d in log} == set(ids)


async def test_outbox_row_exists_iff_the_write_committed(
    engine: AsyncEngine, alice: Actor, receiver: Receiver
) -> None:
    await add_webhook(alice, receiver.url)
    r = await alice.post("/api/v1/memos", params={"memoId": "taken-id"}, json={"content": "one"})
    assert r.status_code == 200, r.text
    assert len(await events(engine)) == 1
    r = await alice.post("/api/v1/memos", params={"memoId": "taken-id"}, json={"content": "again"})
    assert r.status_code == 409
    assert len(await events(engine)) == 1
    # The event is written on the write's own connection: rolled back with it.
    async with engine.connect() as conn:
        alice_id = (
            await conn.execute(
                sa.select(user_account.c.id).where(user_account.c.username == "alice")
            )
        ).scalar_one()
    caller = Caller(alice_id, "alice", "ADMIN", Credential.SESSION)
    ctx = WriteContext(caller, AccessSettings(access_mode=AccessMode.PRIVATE), int(time.time()))

    class Abort(Exception):
        pass

    try:
        async with write_transaction(engine) as conn:
            await create_memo(conn, ctx, MemoIn(content="never"), None)
            assert len((await conn.execute(sa.select(webhook_event.c.id))).all()) == 2
            raise Abort
    except Abort:
        pass
    assert len(await events(engine)) == 1


async def test_a_failing_receiver_gets_retries_with_backoff(
    engine: AsyncEngine, settings: Settings, alice: Actor, receiver: Receiver
) -> None:
    hook, secret = await add_webhook(alice, receiver.url)
    receiver.replies = [(500, b""), (503, b""), (200, b'{"code":1,"message":"busy"}')]
    await alice.memo("retry me")
    policy = policy_of(settings, retry_base=0.2)
    assert (await drain(engine, policy))[-1] == "DELIVERED"

    assert len(receiver.received) == 4
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1  # one message
    receiver.verified(secret)
    gaps = [b.at - a.at for a, b in zip(receiver.received, receiver.received[1:], strict=False)]
    for gap, floor in zip(gaps, (0.2, 0.4, 0.8), strict=True):
        assert gap >= floor * 0.95, gaps  # base * 2**(n-1), never sooner
    assert gaps[2] > gaps[0]
    log = await deliveries(alice, hook)
    assert [(d["attempt"], d["outcome"], d["statusCode"]) for d in reversed(log)] == [
        (1, "FAILED", 500),
        (2, "FAILED", 503),
        (3, "FAILED", 200),
        (4, "DELIVERED", 200),
    ]
    assert log[1]["error"] == "code 1: busy"


async def test_retries_stop_at_the_cap(
    engine: AsyncEngine, settings: Settings, alice: Actor, receiver: Receiver
) -> None:
    hook, _ = await add_webhook(alice, receiver.url)
    receiver.default = (500, b"")
    await alice.memo("doomed")
    await drain(engine, policy_of(settings, retry_base=0.05, max_attempts=3))
    assert len(receiver.received) == 3
    (event,) = await events(engine)
    assert (event.state, event.attempts) == ("FAILED", 3)
    await run_once(engine, policy_of(settings))
    assert len(receiver.received) == 3
    assert [d["eventState"] for d in await deliveries(alice, hook)] == ["FAILED"] * 3


async def test_a_comment_made_private_before_delivery_is_withheld(
    engine: AsyncEngine, settings: Settings, alice: Actor, bob: Actor, receiver: Receiver
) -> None:
    hook, _ = await add_webhook(alice, receiver.url)
    memo = await alice.memo("discuss", visibility="PROTECTED")
    r = await bob.post(
        f"/api/v1/{memo['name']}/comments",
        json={"content": "secret-ish", "visibility": "PROTECTED"},
    )
    assert r.status_code == 200, r.text
    comment = r.json()
    # A PRIVATE comment is never enqueued for alice: she cannot read it.
    r = await bob.post(
        f"/api/v1/{memo['name']}/comments", json={"content": "for me", "visibility": "PRIVATE"}
    )
    assert r.status_code == 200
    pending = [e.activity for e in await events(engine)]
    assert pending == ["memos.memo.created", "memos.memo.comment.created"]
    # Before the worker runs, bob makes his comment PRIVATE.
    r = await bob.patch(f"/api/v1/{comment['name']}", json={"visibility": "PRIVATE"})
    assert r.status_code == 200, r.text
    assert sorted(await drain(engine, policy_of(settings))) == ["DELIVERED", "WITHHELD"]

    assert [b["activityType"] for b in (r.json for r in receiver.received)] == [
        "memos.memo.created"
    ]
    assert b"secret-ish" not in b"".join(r.body for r in receiver.received)
    withheld = [d for d in await deliveries(alice, hook) if d["outcome"] == "WITHHELD"]
    assert len(withheld) == 1
    assert withheld[0]["activityType"] == "memos.memo.comment.created"
    assert comment["name"] not in str(withheld) and "secret" not in str(withheld)


async def test_a_space_memo_is_withheld_once_its_creator_left_the_space(
    engine: AsyncEngine, settings: Settings, alice: Actor, bob: Actor, receiver: Receiver
) -> None:
    space = await create_space(alice, "Team")
    await join(alice, space["name"], bob)
    hook, _ = await add_webhook(bob, receiver.url)
    r = await bob.post(
        "/api/v1/memos",
        json={
            "content": "team plan",
            "space": space["name"],
            "tree": "share",
            "visibility": "SPACE",
        },
    )
    assert r.status_code == 200, r.text
    assert len(await events(engine)) == 1
    assert (await alice.delete(f"/api/v1/{space['name']}/members/bob")).status_code == 200
    assert await drain(engine, policy_of(settings)) == ["WITHHELD"]
    assert receiver.received == []
    assert [d["outcome"] for d in await deliveries(bob, hook)] == ["WITHHELD"]


async def test_a_deleted_memo_whose_space_the_owner_left_is_withheld(
    engine: AsyncEngine, settings: Settings, alice: Actor, bob: Actor, receiver: Receiver
) -> None:
    space = await create_space(alice, "Team")
    await join(alice, space["name"], bob)
    r = await bob.post(
        "/api/v1/memos",
        json={
            "content": "team plan",
            "space": space["name"],
            "tree": "share",
            "visibility": "SPACE",
        },
    )
    assert r.status_code == 200, r.text
    await add_webhook(bob, receiver.url)
    assert (await bob.delete(f"/api/v1/{r.json()['name']}")).status_code == 200
    assert [e.activity for e in await events(engine)] == ["memos.memo.deleted"]
    assert (await alice.delete(f"/api/v1/{space['name']}/members/bob")).status_code == 200
    assert await drain(engine, policy_of(settings)) == ["WITHHELD"]
    assert receiver.received == []


async def test_concurrent_claimers_take_each_event_once(
    engine: AsyncEngine, settings: Settings, alice: Actor, receiver: Receiver
) -> None:
    """Several workers on one database (separate engines, as separate processes
    would have) claim disjoint sets, and together every due event."""
    from app.db.engine import create_engine

    await add_webhook(alice, receiver.url)
    for i in range(24):
        await alice.memo(f"memo {i}")
    policy = policy_of(settings, batch=5)
    engines = [create_engine(settings.database_url) for _ in range(4)]
    try:

        async def claimer(engine: Any) -> list[int]:
            got: list[int] = []
            while True:
                batch = await claim(engine, policy)
                if not batch:
                    return got
                got += [c.id for c in batch]

        results = await asyncio.gather(*(claimer(e) for e in engines))
    finally:
        for e in engines:
            await e.dispose()
    claimed = [i for r in results for i in r]
    assert len(claimed) == 24 and len(set(claimed)) == 24
    assert {e.attempts for e in await events(engine)} == {1}


async def test_the_lifespan_worker_delivers(settings: Settings, receiver: Receiver) -> None:
    async with AsyncTestClient(app=create_app(replace(settings, webhook_worker=True))) as c:
        alice = await sign_up(c, "alice")
        _, secret = await add_webhook(alice, receiver.url)
        await alice.memo("live")
        for _ in range(200):
            if receiver.received:
                break
            await asyncio.sleep(0.02)
        (body,) = receiver.verified(secret)
        assert body["activityType"] == "memos.memo.created"
