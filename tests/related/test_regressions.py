"""Named regression tests, one per peer bug (bugs seen in Memos-like servers).

Each asserts both sides: the allowed thing still works for its owner, and the
forbidden thing fails *and* leaves no side effect.
"""

from __future__ import annotations

import base64
from typing import Any

from litestar.testing import AsyncTestClient

from app.settings import Settings
from tests.conftest import Actor
from tests.related.helpers import comment, make_public, names_of, upload


async def test_cannot_delete_another_users_reaction(alice: Actor, bob: Actor) -> None:
    """Peer bug: DeleteMemoReaction checked only that the caller was signed in, so anyone
    could delete anyone's reaction by id."""
    m = await alice.memo("m", visibility="PUBLIC")
    mine = (await alice.post(f"/api/v1/{m['name']}/reactions", json={"reactionType": "👍"})).json()
    r = await bob.delete(f"/api/v1/{mine['name']}")
    assert r.status_code in (403, 404)
    # Not through another memo's path either.
    other = await bob.memo("b", visibility="PUBLIC")
    rid = mine["name"].rsplit("/", 1)[1]
    assert (await bob.delete(f"/api/v1/{other['name']}/reactions/{rid}")).status_code == 404
    assert (await alice.delete(f"/api/v1/{other['name']}/reactions/{rid}")).status_code == 404
    listed = (await alice.get(f"/api/v1/{m['name']}/reactions")).json()["reactions"]
    assert [x["name"] for x in listed] == [mine["name"]]


async def test_cannot_bind_another_users_attachment(alice: Actor, bob: Actor) -> None:
    """Peer bug: SetMemoAttachments bound any attachment id to the caller's memo, moving
    another user's private file into a memo the attacker controls."""
    secret_memo = await alice.memo("alice private", visibility="PRIVATE")
    bound = await upload(alice, "bound.txt", b"alice-bound", memo=secret_memo["name"])
    loose = await upload(alice, "loose.txt", b"alice-loose")
    public_memo = await alice.memo("alice public", visibility="PROTECTED")
    visible = await upload(alice, "visible.txt", b"alice-visible", memo=public_memo["name"])
    bobs = await bob.memo("bob's", visibility="PUBLIC")
    url = f"/api/v1/{bobs['name']}/attachments"
    for a, status in ((bound, 404), (loose, 404), (visible, 403)):
        r = await bob.patch(url, json={"attachments": [{"name": a["name"]}]})
        assert r.status_code == status, r.text
    # On create too: an attachment cannot be pointed at someone else's memo.
    r = await bob.post(
        "/api/v1/attachments",
        json={"filename": "x", "content": "eA==", "memo": secret_memo["name"]},
    )
    assert r.status_code == 404
    assert await names_of(bob, url, "attachments") == []
    assert (await alice.get(f"/api/v1/{bound['name']}")).json()["memo"] == secret_memo["name"]
    assert "memo" not in (await alice.get(f"/api/v1/{loose['name']}")).json()
    assert (await alice.get(f"/api/v1/{visible['name']}")).json()["memo"] == public_memo["name"]


async def test_cannot_read_or_overwrite_another_users_attachment(alice: Actor, bob: Actor) -> None:
    """Peer bug: attachments were served by id to any caller, and a client-chosen id could
    replace another user's file."""
    a = await upload(alice, "diary.txt", b"alice-diary")
    uid = a["name"].split("/")[1]
    r = await bob.get(f"/api/v1/{a['name']}")
    assert r.status_code == 404 and "diary" not in r.text
    r = await bob.get(f"/file/attachments/{uid}/diary.txt")
    assert r.status_code == 404 and b"alice-diary" not in r.content
    r = await bob.post(
        f"/api/v1/attachments?attachmentId={uid}",
        json={"filename": "diary.txt", "content": base64.b64encode(b"pwned").decode()},
    )
    assert r.status_code == 409
    assert (await bob.delete(f"/api/v1/{a['name']}")).status_code == 404
    assert await names_of(bob, "/api/v1/attachments", "attachments") == []
    assert (await alice.get(f"/file/attachments/{uid}")).content == b"alice-diary"


async def test_private_comment_on_public_memo_hidden_from_others(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Peer bug: comments inherited the parent's audience, so a PRIVATE comment on a PUBLIC
    memo was listed to everyone who could read the parent."""
    await make_public(alice)
    parent = await alice.memo("public post", visibility="PUBLIC")
    private = (await comment(bob, parent, "bob private remark", visibility="PRIVATE")).json()
    public = (await comment(bob, parent, "bob public remark", visibility="PUBLIC")).json()
    url = f"/api/v1/{parent['name']}/comments"
    assert await names_of(bob, url) == [private["name"], public["name"]]
    for who in (alice, client):
        r = await who.get(url)
        assert [m["name"] for m in r.json()["memos"]] == [public["name"]]
        assert "private remark" not in r.text
        assert (await who.get(f"/api/v1/{private['name']}")).status_code == 404
        parent_view = await who.get(f"/api/v1/{parent['name']}")
        assert private["name"] not in parent_view.text


async def test_private_comment_not_counted_for_anonymous(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    """Peer bug: the comment count came from all comment rows, so anonymous readers learned
    that hidden comments exist."""
    await make_public(alice)
    parent = await alice.memo("p", visibility="PUBLIC")
    await comment(alice, parent, "hidden", visibility="PRIVATE")
    await comment(alice, parent, "team", visibility="PROTECTED")
    shown = (await comment(alice, parent, "shown", visibility="PUBLIC")).json()
    body = (await client.get(f"/api/v1/{parent['name']}/comments")).json()
    assert body["totalSize"] == 1 and [m["name"] for m in body["memos"]] == [shown["name"]]
    assert (await alice.get(f"/api/v1/{parent['name']}/comments")).json()["totalSize"] == 3
    relations = (await client.get(f"/api/v1/{parent['name']}")).json()["relations"]
    assert [x["memo"]["name"] for x in relations] == [shown["name"]]


async def test_tags_used_only_in_private_memos_not_listed_to_others(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Peer bug: tag lists and getStats tag counts were computed over all of a user's memos,
    leaking tags that appear only in PRIVATE ones."""
    await make_public(alice)
    await alice.memo("#secret-project plans", visibility="PRIVATE")
    await alice.memo("#team-only plans", visibility="PROTECTED")
    await alice.memo("#hello world", visibility="PUBLIC")
    parent = await alice.memo("#hello again", visibility="PUBLIC")
    await comment(alice, parent, "#comment-tag", visibility="PUBLIC")
    assert (await alice.get("/api/v1/users/alice:getStats")).json()["tagCount"] == {
        "hello": 2,
        "secret-project": 1,
        "team-only": 1,
    }
    assert (await bob.get("/api/v1/users/alice:getStats")).json()["tagCount"] == {
        "hello": 2,
        "team-only": 1,
    }
    r = await client.get("/api/v1/users/alice:getStats")
    assert r.json()["tagCount"] == {"hello": 2} and "secret" not in r.text


async def test_private_memo_not_shown_through_relation(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Peer bug: a readable memo's relations included the related memo's name and snippet
    even when that memo was PRIVATE to someone else."""
    await make_public(alice)
    hidden = await alice.memo("the hidden snippet", visibility="PRIVATE")
    shown = await alice.memo("public memo", visibility="PUBLIC")
    r = await alice.patch(
        f"/api/v1/{shown['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": hidden["name"]}}]},
    )
    assert r.status_code == 200 and len(r.json()["relations"]) == 1
    for who in (bob, client):
        for url in (
            f"/api/v1/{shown['name']}",
            f"/api/v1/{shown['name']}/relations",
            "/api/v1/memos",
        ):
            r = await who.get(url)
            assert r.status_code == 200
            assert hidden["name"] not in r.text and "hidden snippet" not in r.text
    # And bob cannot create such a relation to alice's private memo from his side.
    bobs = await bob.memo("b", visibility="PUBLIC")
    r = await bob.patch(
        f"/api/v1/{bobs['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": hidden["name"]}}]},
    )
    assert r.status_code == 404 and "hidden snippet" not in r.text


async def test_public_visibility_ban_not_bypassed_by_editing(alice: Actor, bob: Actor) -> None:
    """Peer bug: disallowPublicVisibility was enforced on create only; an update (or a
    comment) could still make a memo PUBLIC."""
    await alice.patch("/api/v1/instance/settings/ACCESS", json={"disallowPublicVisibility": True})
    m = await bob.memo("x", visibility="PROTECTED")
    r = await bob.patch(f"/api/v1/{m['name']}?updateMask=visibility", json={"visibility": "PUBLIC"})
    assert r.status_code == 403
    r = await bob.patch(f"/api/v1/{m['name']}", json={"visibility": "PUBLIC"})
    assert r.status_code == 403
    assert (await comment(bob, m, "c", visibility="PUBLIC")).status_code == 403
    assert (await bob.get(f"/api/v1/{m['name']}")).json()["visibility"] == "PROTECTED"
    assert await names_of(bob, f"/api/v1/{m['name']}/comments") == []


async def test_token_stops_working_after_password_change(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Peer bug: sign-in tokens stayed valid after a password change, so a stolen token
    survived the victim's reaction to the theft."""
    stolen = dict(bob.headers)
    m = await bob.memo("b", visibility="PRIVATE")
    r = await bob.patch(
        "/api/v1/users/bob?updateMask=password",
        json={"password": "new-password-9", "currentPassword": "password-1"},
    )
    assert r.status_code == 200
    for url in ("/api/v1/auth/me", "/api/v1/memos", f"/api/v1/{m['name']}", "/api/v1/attachments"):
        assert (await client.get(url, headers=stolen)).status_code == 401
    r = await client.post("/api/v1/memos", json={"content": "x"}, headers=stolen)
    assert r.status_code == 401


async def test_attachment_filename_with_dotdot_never_becomes_a_path(
    alice: Actor, settings: Settings
) -> None:
    """Peer bug: the upload's filename was joined into the storage path, so `../` wrote
    outside the upload directory."""
    root = settings.data_dir
    before = {p for p in root.rglob("*")}
    for name in ("../../escape.txt", "..\\..\\escape.txt", "/etc/passwd", "a/../../b.txt"):
        a = await upload(alice, name, b"payload")
        assert "/" not in a["filename"] and "\\" not in a["filename"] and ".." not in a["filename"]
        uid = a["name"].split("/")[1]
        assert (await alice.get(f"/file/attachments/{uid}")).content == b"payload"
    created = {p for p in root.rglob("*")} - before
    assert {p.parent for p in created if p.is_file()} == {root / "attachments"}
    assert not any("escape" in p.name or "passwd" in p.name for p in root.parent.rglob("*"))


async def test_admin_creating_token_for_another_user_gets_none(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Peer bug: an admin asking for a token "for bob" got a working token acting as bob."""
    r = await alice.post("/api/v1/users/bob/personalAccessTokens", json={"description": "x"})
    assert r.status_code in (403, 404) and "token" not in r.json()
    listed = await bob.get("/api/v1/users/bob/personalAccessTokens")
    assert listed.json()["personalAccessTokens"] == []
    assert (await alice.get("/api/v1/users/bob/personalAccessTokens")).status_code in (403, 404)


async def test_deleting_archiving_editing_another_users_memo(alice: Actor, bob: Actor) -> None:
    """Peer bug: update and delete checked only that the memo existed, not who wrote it
    (an admin or any user could archive, edit or delete someone else's memo)."""
    for visibility in ("PUBLIC", "PROTECTED", "PRIVATE"):
        m = await bob.memo("bob original", visibility=visibility)
        for actor in (alice, bob):
            if actor is bob:
                continue
            for mask, body in (
                ("state", {"state": "ARCHIVED"}),
                ("content", {"content": "pwned"}),
                ("pinned", {"pinned": True}),
                ("visibility", {"visibility": "PRIVATE"}),
            ):
                r = await actor.patch(f"/api/v1/{m['name']}?updateMask={mask}", json=body)
                assert r.status_code in (403, 404), r.text
            assert (await actor.delete(f"/api/v1/{m['name']}")).status_code in (403, 404)
            c = (await comment(bob, m, "bob comment")).json()
            assert (await actor.delete(f"/api/v1/{c['name']}")).status_code in (403, 404)
        after = (await bob.get(f"/api/v1/{m['name']}")).json()
        assert after["content"] == "bob original" and after["state"] == "NORMAL"
        assert after["pinned"] is False and after["visibility"] == visibility
        assert after["etag"] == m["etag"]
