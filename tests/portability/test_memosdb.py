"""``daybook import-memos-db``: Memos 0.22, 0.26 and 0.31 databases built with Memos' own DDL.

Every carried field is checked; the report names what could not be carried;
a second run changes nothing; a dry run writes nothing; people sign in with
the passwords they had in Memos (and their hash becomes argon2id); a Memos
PostgreSQL database is read too. The Daybook side runs on both dialects.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.auth.passwords import RESET_REQUIRED
from app.db.engine import create_engine
from app.db.schema import (
    attachment,
    instance_setting,
    memo,
    memo_event,
    memo_relation,
    reaction,
    space,
    space_grant,
    space_member,
    user_account,
)
from app.portability.memosdb.carry import CarryOptions, Report, carry
from app.portability.memosdb.source import open_source
from app.settings import Settings
from tests.conftest import Templates, _admin_exec, _counter
from tests.portability import memos_fixture as mf
from tests.portability.state import stored_files

TABLES = (
    user_account,
    memo,
    memo_event,
    memo_relation,
    reaction,
    attachment,
    space,
    space_member,
    space_grant,
    instance_setting,
)


async def _snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    engine = create_engine(url)
    out = {}
    async with engine.connect() as conn:
        for t in TABLES:
            rows = (await conn.execute(sa.select(t))).all()
            out[t.name] = sorted((tuple(r) for r in rows), key=repr)
    await engine.dispose()
    return out


async def _carry(
    settings: Settings,
    source_path: pathlib.Path | None,
    pg: str | None,
    memos_dir: pathlib.Path,
    *,
    dry_run: bool = False,
) -> Report:
    engine = create_engine(settings.database_url)
    try:
        async with open_source(source_path, pg) as source:
            return await carry(
                engine,
                source,
                CarryOptions(data_dir=settings.data_dir, memos_data_dir=memos_dir, dry_run=dry_run),
            )
    finally:
        await engine.dispose()


async def _check(
    settings: Settings,
    client: AsyncTestClient[Any],
    version: str,
    report: Report,
    seeded: mf.Seeded,
) -> None:
    engine = create_engine(settings.database_url)
    async with engine.connect() as conn:
        users = {r.username: r for r in (await conn.execute(sa.select(user_account))).all()}
        memos = {r.uid: r for r in (await conn.execute(sa.select(memo))).all()}
        atts = {r.uid: r for r in (await conn.execute(sa.select(attachment))).all()}
        rels = {
            (a, b, k)
            for a, b, k in (
                await conn.execute(
                    sa.select(
                        memo_relation.c.memo_id,
                        memo_relation.c.related_memo_id,
                        memo_relation.c.type,
                    )
                )
            ).all()
        }
        reacts = (await conn.execute(sa.select(reaction))).all()
        access = (
            await conn.execute(
                sa.select(instance_setting.c.value).where(instance_setting.c.name == "ACCESS")
            )
        ).scalar_one()
        events = (
            await conn.execute(sa.select(sa.func.count()).select_from(memo_event))
        ).scalar_one()
        seats = (await conn.execute(sa.select(space_member))).all()
        spaces = (await conn.execute(sa.select(space))).all()
    await engine.dispose()

    # Users: roles, states, profiles, the bcrypt hash as Memos stored it; the unusable ones reported.
    assert set(users) == {"steven", "alice", "sso"}
    assert (users["steven"].role, users["alice"].role) == ("ADMIN", "USER")
    assert users["steven"].password_hash == seeded.hashes["steven"]
    assert (users["steven"].email, users["steven"].nickname, users["steven"].description) == (
        "s@example.com",
        "Steven",
        "me",
    )
    assert (users["steven"].created_ts, users["steven"].updated_ts) == (
        1_690_000_000,
        1_690_000_001,
    )
    assert users["sso"].password_hash == RESET_REQUIRED
    problems = "\n".join(report.problems)
    assert "'bad name!'" in problems and "sso" in problems

    # Memos: every field.
    one = memos["memo-one"]
    assert one.content == mf.CONTENT_1
    assert (one.created_ts, one.updated_ts) == (mf.T["m1"], mf.T["m1"] + 60)
    assert (one.visibility, one.state, one.pinned) == ("PUBLIC", "NORMAL", True)
    assert one.creator_id == users["steven"].id
    assert one.has_task_list and one.has_incomplete_tasks  # derived again from the content
    if version != "0.22":  # 0.22 had no location
        assert (one.location_placeholder, one.location_latitude, one.location_longitude) == (
            "Office",
            52.52,
            13.405,
        )
    two = memos["memo-two"]
    assert (two.state, two.visibility, two.pinned) == ("ARCHIVED", "PRIVATE", False)
    comment = memos["comment-three"]
    assert (comment.parent_id, comment.visibility, comment.creator_id) == (
        one.id,
        "PROTECTED",
        users["alice"].id,
    )
    assert (comment.id, one.id, "COMMENT") in rels
    assert (memos["refs-four"].id, one.id, "REFERENCE") in rels
    assert "by-bad-user" not in memos
    assert events == len(memos)  # one CREATE event each, through the memo service

    # Reactions: by memo id, uid or the old numeric content id.
    carried = {(r.memo_id, r.creator_id, r.reaction_type) for r in reacts}
    assert (one.id, users["alice"].id, "👍") in carried
    if version == "0.26":
        assert (memos["refs-four"].id, users["steven"].id, "🚀") in carried

    # Attachments: database blob, local file, external link; S3 and outside-the-dir reported.
    assert set(atts) == {"att-blob", "att-local", "att-link"}
    blob = atts["att-blob"]
    assert (settings.data_dir / "attachments" / blob.storage_key).read_bytes() == mf.BLOB
    assert (blob.memo_id, blob.filename, blob.mime_type, blob.created_ts) == (
        one.id,
        "image.png",
        "image/png",
        1_700_000_050,
    )
    local = atts["att-local"]
    assert (settings.data_dir / "attachments" / local.storage_key).read_bytes() == mf.LOCAL
    link = atts["att-link"]
    assert (link.external_link, link.storage_key, link.memo_id) == (
        "https://files.example.com/spec.pdf",
        None,
        two.id,
    )
    assert "att-s3" in problems and "S3" in problems
    assert "att-outside" in problems and "outside the Memos data directory" in problems

    # Settings: content limit and registration always; the access mode where Memos stored it.
    assert access["content_length_limit"] == 16384
    assert access["allow_registration"] is False
    if version == "0.31":
        assert access["access_mode"] == "PUBLIC"
        assert [(s.uid, s.title) for s in spaces] == [("team", "Team")]
        assert {(s.user_id, s.role, s.state) for s in seats} == {
            (users["steven"].id, "ADMIN", "ACTIVE"),
            (users["alice"].id, "USER", "ACTIVE"),
        }
        six = memos["space-six"]
        assert (six.visibility, six.space_id, six.tree) == ("SPACE", spaces[0].id, "share")
    else:
        assert "access mode" in problems

    # People sign in with the password they had; the hash becomes argon2id.
    r = await client.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": "alice", "password": mf.PASSWORDS["alice"]}},
    )
    assert r.status_code == 200, r.text
    token = r.json()["accessToken"]
    client.cookies.clear()  # bearer only from here (a cookie would need the CSRF header)
    r = await client.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": "alice", "password": "wrong-password"}},
    )
    assert r.status_code == 401
    engine = create_engine(settings.database_url)
    async with engine.connect() as conn:
        rehashed = (
            await conn.execute(
                sa.select(user_account.c.password_hash).where(user_account.c.username == "alice")
            )
        ).scalar_one()
    await engine.dispose()
    assert rehashed.startswith("$argon2id$")
    r = await client.get(
        "/api/v1/memos/comment-three", headers={"Authorization": f"Bearer {token}"}
    )
    assert r.status_code == 200
    assert r.json()["parent"] == "memos/memo-one"
    if version == "0.31":  # alice reads the space memo as a member
        r = await client.get(
            "/api/v1/memos/space-six", headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 200, r.text


@pytest.mark.parametrize("version", mf.VERSIONS)
async def test_sqlite_memos_database_is_carried_once(
    version: str, settings: Settings, client: AsyncTestClient[Any], tmp_path: pathlib.Path
) -> None:
    memos_dir = tmp_path / "memos" / "data"
    source = memos_dir / "memos_prod.db"
    memos_dir.mkdir(parents=True)
    seeded = mf.build_sqlite(source, version, memos_dir)
    before = await _snapshot(settings.database_url)

    dry = await _carry(settings, source, None, memos_dir, dry_run=True)
    assert await _snapshot(settings.database_url) == before  # a dry run writes nothing
    assert stored_files(settings.data_dir) == set()
    assert dry.carried["memo"] == 3 + (version == "0.31") and dry.carried["comment"] == 1

    report = await _carry(settings, source, None, memos_dir)
    assert report.carried == dry.carried
    assert report.carried["user"] == 3 and report.carried["attachment"] == 3
    await _check(settings, client, version, report, seeded)

    after = await _snapshot(settings.database_url)
    files = stored_files(settings.data_dir)
    again = await _carry(settings, source, None, memos_dir)
    assert sum(again.carried.values()) == 0, again.lines()
    assert again.existing["memo"] == report.carried["memo"]
    assert await _snapshot(settings.database_url) == after  # the second run changes nothing
    assert stored_files(settings.data_dir) == files


@pytest.mark.parametrize("version", ["0.22", "0.31"])
async def test_postgres_memos_database_is_carried(
    version: str,
    settings: Settings,
    client: AsyncTestClient[Any],
    templates: Templates,
    tmp_path: pathlib.Path,
) -> None:
    if templates.pg_root is None:
        pytest.skip("needs the embedded PostgreSQL (not with --db sqlite)")
    name = f"memos_{os.getpid()}_{next(_counter)}"
    await _admin_exec(templates.pg_root, f"CREATE DATABASE {name}")
    url = templates.pg_root.format(db=name)
    memos_dir = tmp_path / "memos-pg" / "data"
    memos_dir.mkdir(parents=True)
    try:
        seeded = await mf.build_postgres(url, version, memos_dir)
        report = await _carry(settings, None, url, memos_dir)
        await _check(settings, client, version, report, seeded)
        after = await _snapshot(settings.database_url)
        again = await _carry(settings, None, url, memos_dir)
        assert sum(again.carried.values()) == 0, again.lines()
        assert await _snapshot(settings.database_url) == after
    finally:
        await _admin_exec(templates.pg_root, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_non_memos_database_is_refused(tmp_path: pathlib.Path) -> None:
    import asyncio
    import sqlite3

    path = tmp_path / "other.db"
    sqlite3.connect(path).executescript("CREATE TABLE notes (id INTEGER);")

    async def run() -> None:
        async with open_source(path, None):
            pass

    with pytest.raises(ValueError, match="not a Memos database"):
        asyncio.run(run())
