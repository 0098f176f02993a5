"""Attachments: the creator's until bound, then the memo's audience; files under the same rule."""

from __future__ import annotations

import base64
import pathlib
from typing import Any

from litestar.testing import AsyncTestClient

from app.settings import Settings
from tests.conftest import Actor
from tests.related.helpers import make_public, names_of, restricted_key, upload


async def test_create_get_list_delete(alice: Actor, bob: Actor, settings: Settings) -> None:
    a = await upload(alice, "notes.txt", b"hello")
    assert a["filename"] == "notes.txt" and a["type"] == "text/plain" and a["size"] == "5"
    assert "memo" not in a
    assert (await alice.get(f"/api/v1/{a['name']}")).json() == a
    assert (await bob.get(f"/api/v1/{a['name']}")).status_code == 404
    assert await names_of(alice, "/api/v1/attachments", "attachments") == [a["name"]]
    assert await names_of(bob, "/api/v1/attachments", "attachments") == []
    stored = list((settings.data_dir / "attachments").iterdir())
    assert len(stored) == 1 and stored[0].read_bytes() == b"hello"
    assert (await bob.delete(f"/api/v1/{a['name']}")).status_code == 404
    assert (await alice.delete(f"/api/v1/{a['name']}")).status_code == 200
    assert (await alice.get(f"/api/v1/{a['name']}")).status_code == 404
    assert list((settings.data_dir / "attachments").iterdir()) == []


async def test_multipart_upload(alice: Actor) -> None:
    r = await alice.post(
        "/api/v1/attachments",
        files={"file": ("pic.png", b"\x89PNG\r\n\x1a\nxx", "image/png")},
    )
    assert r.status_code == 200, r.text
    assert r.json()["filename"] == "pic.png" and r.json()["type"] == "image/png"
    assert r.json()["size"] == "10"


async def test_size_limit_names_the_limit(
    client: AsyncTestClient[Any], alice: Actor, settings: Settings
) -> None:
    limit = settings.attachment_size_limit
    big = base64.b64encode(b"x" * (limit + 1)).decode()
    r = await alice.post("/api/v1/attachments", json={"filename": "big.bin", "content": big})
    assert r.status_code == 413 and str(limit) in r.json()["message"]
    r = await alice.post(
        "/api/v1/attachments",
        files={"file": ("big.bin", b"x" * (limit + 1), "application/octet-stream")},
    )
    assert r.status_code in (400, 413) and str(limit) in r.json()["message"]
    assert await names_of(alice, "/api/v1/attachments", "attachments") == []


async def test_bad_input(alice: Actor) -> None:
    assert (
        await alice.post("/api/v1/attachments", json={"filename": "a", "content": "!!"})
    ).status_code == 400
    assert (await alice.post("/api/v1/attachments", json={"content": "aGk="})).status_code == 400
    r = await alice.post(
        "/api/v1/attachments", json={"filename": "a", "type": "not a type", "content": "aGk="}
    )
    assert r.status_code == 400
    assert (
        await alice.post(
            "/api/v1/attachments", content=b"{", headers={"Content-Type": "application/json"}
        )
    ).status_code == 400
    assert (await alice.get("/api/v1/attachments?filter=nope")).status_code == 400
    assert (await alice.get("/api/v1/attachments?pageToken=garbage")).status_code == 400


async def test_list_filter_and_paging(alice: Actor) -> None:
    m = await alice.memo("m")
    bound = [await upload(alice, f"b{i}.txt", b"b", memo=m["name"]) for i in range(3)]
    loose = [await upload(alice, f"l{i}.png", b"l", mime="image/png") for i in range(3)]
    got = await names_of(alice, "/api/v1/attachments?filter=memo_id == null", "attachments")
    assert set(got) == {a["name"] for a in loose}
    got = await names_of(
        alice, f'/api/v1/attachments?filter=memo_id == "{m["name"]}"', "attachments"
    )
    assert set(got) == {a["name"] for a in bound}
    got = await names_of(
        alice, '/api/v1/attachments?filter=mime_type == "image/png"', "attachments"
    )
    assert set(got) == {a["name"] for a in loose}
    got = await names_of(
        alice, '/api/v1/attachments?filter=filename.startsWith("b")', "attachments"
    )
    assert set(got) == {a["name"] for a in bound}
    seen: list[str] = []
    token = ""
    while True:
        r = (await alice.get(f"/api/v1/attachments?pageSize=4&pageToken={token}")).json()
        seen += [a["name"] for a in r["attachments"]]
        token = r["nextPageToken"]
        if not token:
            break
    assert sorted(seen) == sorted(a["name"] for a in bound + loose) and len(seen) == 6


async def test_memo_attachments_set_and_list(alice: Actor, bob: Actor) -> None:
    m = await alice.memo("m", visibility="PROTECTED")
    a1 = await upload(alice, "1.txt", b"1")
    a2 = await upload(alice, "2.txt", b"2")
    url = f"/api/v1/{m['name']}/attachments"
    r = await alice.patch(url, json={"attachments": [{"name": a1["name"]}, {"name": a2["name"]}]})
    assert r.status_code == 200, r.text
    assert [a["name"] for a in r.json()["attachments"]] == [a1["name"], a2["name"]]
    assert await names_of(bob, url, "attachments") == [a1["name"], a2["name"]]
    assert [a["name"] for a in (await bob.get(f"/api/v1/{m['name']}")).json()["attachments"]] == [
        a1["name"],
        a2["name"],
    ]
    assert (await bob.get(f"/api/v1/{a1['name']}")).json()["memo"] == m["name"]
    # Dropping one unbinds it (it stays the creator's, readable only by her).
    r = await alice.patch(url, json={"attachments": [{"name": a2["name"]}]})
    assert [a["name"] for a in r.json()["attachments"]] == [a2["name"]]
    assert (await bob.get(f"/api/v1/{a1['name']}")).status_code == 404
    assert "memo" not in (await alice.get(f"/api/v1/{a1['name']}")).json()
    # Someone else cannot set the memo's attachments.
    b1 = await upload(bob, "b.txt", b"b")
    r = await bob.patch(url, json={"attachments": [{"name": b1["name"]}]})
    assert r.status_code == 403
    assert await names_of(alice, url, "attachments") == [a2["name"]]


async def test_attachment_bound_on_create_needs_a_writable_memo(alice: Actor, bob: Actor) -> None:
    theirs = await alice.memo("alice's", visibility="PROTECTED")
    r = await bob.post(
        "/api/v1/attachments",
        json={"filename": "x.txt", "content": "eA==", "memo": theirs["name"]},
    )
    assert r.status_code == 403
    assert await names_of(alice, f"/api/v1/{theirs['name']}/attachments", "attachments") == []
    assert await names_of(bob, "/api/v1/attachments", "attachments") == []


async def test_files_follow_the_memo(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    private = await alice.memo("p", visibility="PRIVATE")
    team = await alice.memo("t", visibility="PROTECTED")
    public = await alice.memo("w", visibility="PUBLIC")
    fp = await upload(alice, "p.txt", b"private-bytes", memo=private["name"])
    ft = await upload(alice, "t.png", b"team-bytes", mime="image/png", memo=team["name"])
    fw = await upload(alice, "w.txt", b"world-bytes", memo=public["name"])
    loose = await upload(alice, "l.txt", b"loose-bytes")

    def url(a: dict[str, Any], named: bool = True) -> str:
        uid = a["name"].split("/")[1]
        return f"/file/attachments/{uid}/{a['filename']}" if named else f"/file/attachments/{uid}"

    for a, body in (
        (fp, b"private-bytes"),
        (ft, b"team-bytes"),
        (fw, b"world-bytes"),
        (loose, b"loose-bytes"),
    ):
        for named in (True, False):
            r = await alice.get(url(a, named))
            assert r.status_code == 200 and r.content == body
            assert r.headers["x-content-type-options"] == "nosniff"
    assert (await bob.get(url(fp))).status_code == 404
    assert (await bob.get(url(loose))).status_code == 404
    r = await bob.get(url(ft))
    assert r.status_code == 200 and r.headers["cache-control"] == "private, no-store"
    assert r.headers["content-type"] == "image/png"
    assert r.headers["content-disposition"].startswith("inline")
    r = await bob.get(url(fw))
    assert r.status_code == 200 and "no-store" not in r.headers["cache-control"]
    assert r.headers["content-type"].startswith("text/plain")
    assert (await client.get(url(fw))).status_code == 404  # PRIVATE instance
    await make_public(alice)
    assert (await client.get(url(fw))).content == b"world-bytes"
    for a in (fp, ft, loose):
        r = await client.get(url(a))
        assert r.status_code == 404 and b"bytes" not in r.content


async def test_risky_types_download_never_inline(alice: Actor) -> None:
    for name, mime in (
        ("x.html", "text/html"),
        ("x.svg", "image/svg+xml"),
        ("x.xml", "application/xml"),
        ("x.js", ""),
    ):
        a = await upload(alice, name, b"<script>alert(1)</script>", mime=mime)
        r = await alice.get(f"/file/attachments/{a['name'].split('/')[1]}")
        assert r.status_code == 200
        assert r.headers["content-disposition"].startswith("attachment")
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in r.headers["content-security-policy"]
        assert not r.headers["content-type"].startswith("text/plain")


async def test_filename_is_sanitised(alice: Actor) -> None:
    a = await upload(alice, "dir\\sub/evil\u202e\u0007name.txt", b"x")
    assert a["filename"] == "evilname.txt"
    a = await upload(alice, "..", b"x")
    assert a["filename"] == "file"


async def test_restricted_key_none_does_not_reach_unbound(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    loose = await upload(alice, "l.txt", b"x")
    none_key = await restricted_key(alice, scope="READ", personal="NONE")
    own_key = await restricted_key(alice, scope="READ", personal="OWN")
    assert (await client.get(f"/api/v1/{loose['name']}", headers=none_key)).status_code == 404
    assert await names_of(client, "/api/v1/attachments", "attachments", headers=none_key) == []
    assert await names_of(client, "/api/v1/attachments", "attachments", headers=own_key) == [
        loose["name"]
    ]
    r = await client.post(
        "/api/v1/attachments", json={"filename": "a", "content": "eA=="}, headers=own_key
    )
    assert r.status_code == 403
    assert (await client.delete(f"/api/v1/{loose['name']}", headers=own_key)).status_code == 403


async def test_stored_under_random_key(alice: Actor, settings: Settings) -> None:
    await upload(alice, "report.pdf", b"%PDF", mime="application/pdf")
    files = list((settings.data_dir / "attachments").iterdir())
    assert len(files) == 1 and "report" not in files[0].name and len(files[0].name) == 32
    assert pathlib.Path(files[0]).parent == settings.data_dir / "attachments"


async def test_a_repeated_upload_with_its_client_id_is_idempotent(
    alice: Actor, bob: Actor, settings: Settings
) -> None:
    """The outbox's retry (decision 0039): the same id, creator and bytes answer the
    first attachment and store nothing again; anything else is 409, and another
    user's repeat never gets the attachment, its name or its bytes."""
    stored = settings.data_dir / "attachments"
    uid = "offline0photo00000001"
    body = {"filename": "ticket.png", "type": "image/png", "content": "iVBORw0KGgo="}
    first = await alice.post(f"/api/v1/attachments?attachmentId={uid}", json=body)
    assert first.status_code == 200, first.text
    again = await alice.post(f"/api/v1/attachments?attachmentId={uid}", json=body)
    assert again.status_code == 200 and again.json() == first.json()
    assert await names_of(alice, "/api/v1/attachments", "attachments") == [f"attachments/{uid}"]
    assert len(list(stored.iterdir())) == 1
    # Other bytes under the same id: a conflict, and the first file untouched.
    other = {**body, "content": base64.b64encode(b"other bytes").decode()}
    r = await alice.post(f"/api/v1/attachments?attachmentId={uid}", json=other)
    assert r.status_code == 409
    # Another user with the very same upload: 409, never alice's attachment.
    for attempt in (body, other):
        r = await bob.post(f"/api/v1/attachments?attachmentId={uid}", json=attempt)
        assert r.status_code == 409 and "ticket" not in r.text and "createTime" not in r.text
    assert await names_of(bob, "/api/v1/attachments", "attachments") == []
    assert len(list(stored.iterdir())) == 1
    # Bound by the memo create that followed, a repeat naming no memo still
    # answers it (the outbox retrying after a lost answer); one naming another memo is 409.
    memo = await alice.memo("train", attachments=[{"name": f"attachments/{uid}"}])
    r = await alice.post(f"/api/v1/attachments?attachmentId={uid}", json=body)
    assert r.status_code == 200 and r.json()["memo"] == memo["name"]
    elsewhere = await alice.memo("elsewhere")
    r = await alice.post(
        f"/api/v1/attachments?attachmentId={uid}", json={**body, "memo": elsewhere["name"]}
    )
    assert r.status_code == 409
    r = await alice.post(
        f"/api/v1/attachments?attachmentId={uid}", json={**body, "memo": memo["name"]}
    )
    assert r.status_code == 200
    # The multipart form (hashed as streamed to disk) and a link repeat alike.
    parts = {"file": ("scan.pdf", b"%PDF-1.4 scan", "application/pdf")}
    made = await alice.post("/api/v1/attachments?attachmentId=offline0scan", files=parts)
    assert made.status_code == 200, made.text
    r = await alice.post("/api/v1/attachments?attachmentId=offline0scan", files=parts)
    assert r.status_code == 200 and r.json() == made.json()
    r = await alice.post(
        "/api/v1/attachments?attachmentId=offline0scan",
        files={"file": ("scan.pdf", b"%PDF-1.4 another", "application/pdf")},
    )
    assert r.status_code == 409
    link = {"filename": "map", "externalLink": "https://example.com/map"}
    made = await alice.post("/api/v1/attachments?attachmentId=offline0link", json=link)
    r = await alice.post("/api/v1/attachments?attachmentId=offline0link", json=link)
    assert made.status_code == 200 and r.json() == made.json()
    r = await alice.post(
        "/api/v1/attachments?attachmentId=offline0link",
        json={**link, "externalLink": "https://example.com/other"},
    )
    assert r.status_code == 409
    assert len(list(stored.iterdir())) == 2
    assert len(await names_of(alice, "/api/v1/attachments", "attachments")) == 3
