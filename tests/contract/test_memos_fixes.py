"""The Memos 0.31 mismatches of issue 17, each pinned by behaviour (both dialects).

Every test here failed on the code before the fix: the field was missing,
the route answered 404/405, or the value was dropped.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import Actor, sign_up
from tests.support import make_public

PNG = "iVBORw0KGgo="


async def _upload(actor: Actor, name: str = "a.txt", **extra: Any) -> dict[str, Any]:
    body = {"filename": name, "type": "text/plain", "content": "aGk=", **extra}
    r = await actor.post("/api/v1/attachments", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def _count_memos(actor: Actor) -> int:
    r = await actor.get("/api/v1/memos", params={"pageSize": 1000})
    return len(r.json()["memos"])


async def test_create_and_update_bind_attachments_and_relations(alice: Actor, bob: Actor) -> None:
    target = await alice.memo("target", visibility="PUBLIC")
    att = await _upload(alice)
    r = await alice.post(
        "/api/v1/memos",
        json={
            "content": "with files",
            "attachments": [{"name": att["name"]}],
            "relations": [{"relatedMemo": {"name": target["name"]}, "type": "REFERENCE"}],
        },
    )
    assert r.status_code == 200, r.text
    memo = r.json()
    assert [a["name"] for a in memo["attachments"]] == [att["name"]]
    assert [x["relatedMemo"]["name"] for x in memo["relations"]] == [target["name"]]
    fetched = (await alice.get(f"/api/v1/{memo['name']}")).json()
    assert [a["name"] for a in fetched["attachments"]] == [att["name"]]

    # Someone else's attachment: refused, and the memo is not created either.
    before = await _count_memos(bob)
    r = await bob.post(
        "/api/v1/memos", json={"content": "steal", "attachments": [{"name": att["name"]}]}
    )
    assert r.status_code == 404, r.text  # not visible to bob: not even its existence
    assert await _count_memos(bob) == before

    # updateMask=attachments,relations replaces both; output-only paths are ignored.
    other = await _upload(alice, "b.txt")
    r = await alice.patch(
        f"/api/v1/{memo['name']}",
        params={"updateMask": "attachments,relations,tags,name"},
        json={
            "name": memo["name"],
            "attachments": [{"name": other["name"]}],
            "relations": [
                {"memo": {"name": memo["name"]}, "relatedMemo": {"name": memo["name"]}},
                {"relatedMemo": {"name": target["name"]}, "type": "COMMENT"},
            ],
        },
    )
    assert r.status_code == 200, r.text
    assert [a["name"] for a in r.json()["attachments"]] == [other["name"]]
    assert r.json()["relations"] == []  # reflexive and COMMENT relations skipped, as Memos does
    # bob may not rebind alice's memo.
    r = await bob.patch(
        f"/api/v1/{memo['name']}",
        params={"updateMask": "attachments"},
        json={"attachments": []},
    )
    assert r.status_code in (403, 404), r.text
    r = await alice.patch(
        f"/api/v1/{memo['name']}", params={"updateMask": "nonsense"}, json={"content": "x"}
    )
    assert r.status_code == 400 and "nonsense" in r.json()["message"]


async def test_comment_binds_its_attachments(alice: Actor, bob: Actor) -> None:
    memo = await alice.memo("commented", visibility="PUBLIC")
    att = await _upload(bob)
    r = await bob.post(
        f"/api/v1/{memo['name']}/comments",
        json={"content": "see file", "attachments": [{"name": att["name"]}]},
    )
    assert r.status_code == 200, r.text
    assert [a["name"] for a in r.json()["attachments"]] == [att["name"]]


async def test_enum_zero_values_and_library_wording(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/memos",
        json={"content": "z", "visibility": "VISIBILITY_UNSPECIFIED", "state": "STATE_UNSPECIFIED"},
    )
    assert r.status_code == 200, r.text
    assert (r.json()["visibility"], r.json()["state"]) == ("PRIVATE", "NORMAL")
    r = await alice.get("/api/v1/memos", params={"state": "STATE_UNSPECIFIED"})
    assert r.status_code == 200, r.text
    r = await alice.get("/api/v1/memos", params={"state": "X" * 40})
    assert r.status_code == 400
    assert "Expected" not in r.json()["message"] and "`" not in r.json()["message"]
    assert "at most 32 characters" in r.json()["message"]
    r = await alice.post("/api/v1/memos", json={"content": 5})
    assert r.status_code == 400
    assert "`" not in r.json()["message"] and "content" in r.json()["message"]


async def test_users_display_name_with_nickname_alias(client: Any, alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/users", json={"username": "carol", "password": "password-3", "displayName": "C"}
    )
    assert r.status_code == 200, r.text
    assert (r.json()["displayName"], r.json()["nickname"]) == ("C", "C")
    r = await alice.patch(
        "/api/v1/users/carol", params={"updateMask": "displayName"}, json={"displayName": "Carol"}
    )
    assert r.status_code == 200 and r.json()["displayName"] == "Carol", r.text
    r = await alice.patch(
        "/api/v1/users/carol", params={"updateMask": "nickname"}, json={"nickname": "Old"}
    )
    assert r.json()["displayName"] == "Old"
    r = await alice.patch(
        "/api/v1/users/carol",
        params={"updateMask": "displayName,createTime"},
        json={"displayName": "Masked"},
    )
    assert r.status_code == 200 and r.json()["displayName"] == "Masked"


async def test_users_batch_get_and_all_stats(client: Any, alice: Actor, bob: Actor) -> None:
    await make_public(alice)
    await alice.memo("public one", visibility="PUBLIC")
    await bob.memo("bob private")
    r = await bob.post("/api/v1/users:batchGet", json={"usernames": ["alice", "nobody", "bob"]})
    assert r.status_code == 200, r.text
    users = r.json()["users"]
    assert [u["username"] for u in users] == ["alice", "bob"]
    assert users[0]["email"] == "" and users[0]["displayName"] == ""
    r = await client.get("/api/v1/users:stats")  # anonymous: only users with a visible memo
    assert r.status_code == 200, r.text
    assert [s["name"] for s in r.json()["stats"]] == ["users/alice"]
    stats = r.json()["stats"][0]
    assert stats["memoCreatedTimestamps"] == stats["memoDisplayTimestamps"]
    assert len(stats["memoUpdatedTimestamps"]) == 1
    r = await bob.get("/api/v1/users:stats")
    assert sorted(s["name"] for s in r.json()["stats"]) == ["users/alice", "users/bob"]


async def test_instance_profile_settings_and_stats(client: Any) -> None:
    r = await client.get("/api/v1/instance/profile")
    assert r.json()["needsSetup"] is True and "admin" not in r.json()
    assert r.json()["accessMode"] == "INSTANCE_ACCESS_MODE_PRIVATE"
    alice = await sign_up(client, "alice")
    bob = await sign_up(client, "bob", admin=alice)
    profile = (await client.get("/api/v1/instance/profile")).json()
    assert profile["needsSetup"] is False and profile["admin"]["name"] == "users/alice"
    assert profile["admin"]["email"] == ""
    r = await alice.patch(
        "/api/v1/instance/settings/ACCESS",
        json={"accessSetting": {"accessMode": "INSTANCE_ACCESS_MODE_PUBLIC"}},
    )
    assert r.status_code == 200, r.text
    assert r.json()["accessSetting"]["accessMode"] == "INSTANCE_ACCESS_MODE_PUBLIC"
    assert r.json()["accessMode"] == "PUBLIC"  # Daybook's flat field, kept
    profile = (await client.get("/api/v1/instance/profile")).json()
    assert profile["accessMode"] == "INSTANCE_ACCESS_MODE_PUBLIC"
    r = await alice.patch(
        "/api/v1/instance/settings/GENERAL",
        json={"generalSetting": {"disallowUserRegistration": False}},
    )
    assert r.status_code == 200 and profile["allowRegistration"] is False
    assert (await client.get("/api/v1/instance/profile")).json()["allowRegistration"] is True
    r = await client.post(
        "/api/v1/instance/settings:batchGet",
        json={"names": ["instance/settings/GENERAL", "instance/settings/MEMO_RELATED"]},
    )
    assert r.status_code == 200, r.text
    general, related = r.json()["settings"]
    assert general["generalSetting"]["disallowUserRegistration"] is False
    assert related["memoRelatedSetting"]["contentLengthLimit"] > 0
    r = await client.post(
        "/api/v1/instance/settings:batchGet", json={"names": ["instance/settings/STORAGE"]}
    )
    assert r.status_code == 401
    assert (await bob.get("/api/v1/instance/settings/STORAGE")).status_code == 403
    r = await alice.patch("/api/v1/instance/settings/STORAGE", json={"storageSetting": {}})
    assert r.status_code == 400
    assert (await bob.get("/api/v1/instance/stats")).status_code == 403
    stats = (await alice.get("/api/v1/instance/stats")).json()
    assert int(stats["database"]["sizeBytes"]) > 0
    assert stats["database"]["driver"] in ("sqlite", "postgres")


async def test_personal_access_token_fields(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/users/alice/personalAccessTokens",
        json={"parent": "users/alice", "description": "d", "expiresInDays": 2},
    )
    assert r.status_code == 200, r.text
    pat = r.json()["personalAccessToken"]
    from app.api.structs import parse_time

    assert parse_time(pat["expiresAt"], "x") - parse_time(pat["createdAt"], "x") == 2 * 86400
    assert "lastUsedAt" not in pat
    r = await alice.post("/api/v1/users/alice/personalAccessTokens", json={"expiresInDays": 0})
    assert "expiresAt" not in r.json()["personalAccessToken"]
    token = r.json()["token"]
    await alice.client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
    listed = (await alice.get("/api/v1/users/alice/personalAccessTokens")).json()
    assert listed["nextPageToken"] == ""
    used = [t for t in listed["personalAccessTokens"] if "lastUsedAt" in t]
    assert len(used) == 1


async def test_attachment_link_update_and_batch_delete(alice: Actor, bob: Actor) -> None:
    r = await alice.post(
        "/api/v1/attachments",
        json={"filename": "site", "type": "text/html", "externalLink": "https://example.com/a"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["externalLink"] == "https://example.com/a" and r.json()["size"] == "0"
    bad = await alice.post(
        "/api/v1/attachments",
        json={"filename": "x", "externalLink": "javascript:alert(1)"},
    )
    assert bad.status_code == 400
    mine = await _upload(alice)
    r = await alice.patch(
        f"/api/v1/{mine['name']}", params={"updateMask": "filename"}, json={"filename": "new.txt"}
    )
    assert r.status_code == 200 and r.json()["filename"] == "new.txt", r.text
    assert (
        await bob.patch(f"/api/v1/{mine['name']}", json={"filename": "hijack.txt"})
    ).status_code in (403, 404)
    theirs = await _upload(bob)
    r = await alice.post(
        "/api/v1/attachments:batchDelete", json={"names": [mine["name"], theirs["name"]]}
    )
    assert r.status_code in (403, 404)
    assert (await alice.get(f"/api/v1/{mine['name']}")).status_code == 200  # none deleted
    r = await alice.post("/api/v1/attachments:batchDelete", json={"names": [mine["name"]]})
    assert r.status_code == 200, r.text
    assert (await alice.get(f"/api/v1/{mine['name']}")).status_code == 404


async def test_memo_views_key_get_mask_and_shortcuts(alice: Actor, bob: Actor) -> None:
    r = await alice.post("/api/v1/users/alice/views", json={"title": "T", "filter": "pinned"})
    view = r.json()
    listed = (await alice.get("/api/v1/users/alice/views")).json()
    assert [v["name"] for v in listed["memoViews"]] == [view["name"]]
    assert (await alice.get(f"/api/v1/{view['name']}")).json()["title"] == "T"
    assert (await bob.get(f"/api/v1/{view['name']}")).status_code == 404
    r = await alice.patch(
        f"/api/v1/{view['name']}",
        params={"updateMask": "title"},
        json={"name": view["name"], "title": "T2", "filter": ""},
    )
    assert r.status_code == 200 and r.json()["filter"] == "pinned", r.text
    shortcuts = (await alice.get("/api/v1/users/alice/shortcuts")).json()["shortcuts"]
    number = view["name"].rsplit("/", 1)[1]
    assert [s["name"] for s in shortcuts] == [f"users/alice/shortcuts/{number}"]
    r = await alice.post("/api/v1/users/alice/shortcuts", json={"title": "S", "filter": "pinned"})
    assert r.status_code == 200 and "/shortcuts/" in r.json()["name"]
    assert (await alice.delete(f"/api/v1/{r.json()['name']}")).status_code == 200


async def test_refresh_rotates_the_session(client: Any, alice: Actor) -> None:
    r = await alice.post("/api/v1/auth/refresh", json={})
    assert r.status_code == 200, r.text
    fresh = r.json()["accessToken"]
    assert fresh != alice.token and r.json()["expiresAt"]
    client.cookies.clear()
    assert (await alice.get("/api/v1/auth/me")).status_code == 401  # the old one ended
    me = await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {fresh}"})
    assert me.status_code == 200
    pat = await client.post(
        "/api/v1/users/alice/personalAccessTokens",
        json={},
        headers={"Authorization": f"Bearer {fresh}"},
    )
    key = pat.json()["token"]
    r = await client.post("/api/v1/auth/refresh", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 401
    assert (await client.post("/api/v1/auth/refresh")).status_code == 401


async def test_user_settings_general(alice: Actor, bob: Actor) -> None:
    r = await alice.get("/api/v1/users/alice/settings")
    assert r.status_code == 200, r.text
    (setting,) = r.json()["settings"]
    assert setting["generalSetting"]["memoVisibility"] == "PRIVATE"
    r = await alice.patch(
        "/api/v1/users/alice/settings/GENERAL",
        params={"updateMask": "locale,memoVisibility"},
        json={"generalSetting": {"locale": "fr", "memoVisibility": "PUBLIC", "theme": "ignored!"}},
    )
    assert r.status_code == 200, r.text
    got = (await alice.get("/api/v1/users/alice/settings/GENERAL")).json()["generalSetting"]
    assert (got["locale"], got["memoVisibility"], got["theme"]) == ("fr", "PUBLIC", "system")
    assert (await bob.get("/api/v1/users/alice/settings/GENERAL")).status_code == 403
    bad = await alice.patch(
        "/api/v1/users/alice/settings/GENERAL",
        json={"generalSetting": {"memoVisibility": "EVERYONE"}},
    )
    assert bad.status_code == 400
    assert (await alice.get("/api/v1/users/alice/settings/WEBHOOKS")).status_code == 404
    # bob's settings are his own: alice's change did not reach them.
    theirs = (await bob.get("/api/v1/users/bob/settings/GENERAL")).json()["generalSetting"]
    assert theirs["locale"] == "en"


async def test_batch_create_refuses_bindings_it_would_drop(alice: Actor) -> None:
    att = await _upload(alice)
    before = await _count_memos(alice)
    r = await alice.post(
        "/api/v1/memos:batchCreate",
        json={
            "memos": [{"content": "a"}, {"content": "b", "attachments": [{"name": att["name"]}]}]
        },
    )
    assert r.status_code == 400 and "memos[1].attachments" in r.json()["message"], r.text
    assert await _count_memos(alice) == before
    r = await alice.post("/api/v1/memos:batchCreate", json={"memos": [{"content": "c"}]})
    assert r.status_code == 200, r.text
