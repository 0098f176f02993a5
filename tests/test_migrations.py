"""The Alembic chain, walked generically on both dialects, with data in every table.

The revisions come from ``alembic.script.ScriptDirectory``, so a new migration
is covered without editing this file. For each dialect, on a fresh empty
database:

- ``test_walk_down_and_up_with_data``: upgrade to head, insert realistic rows
  into every table of ``app.db.schema.metadata``, then step down one revision
  at a time to base and back up one at a time to head. At every step the
  database is at the expected revision and every table that has existed
  without interruption still holds exactly the rows inserted at head (on the
  columns it still has). At base no table is left. At head, the schema
  matches the metadata (``alembic.autogenerate.compare_metadata``: no diff),
  ignoring objects created outside the metadata (SQLite FTS5 tables, the
  PostgreSQL trigram expression index).
- ``test_each_revision_reversible_with_data``: for every revision but the
  first, downgrade from head to just below it and upgrade back to head; the
  data survives,
  objects outside the metadata (FTS tables, triggers, expression indexes) are
  back, and the application still serves the memos (sign-in by bearer
  session, listing, ``content.contains`` through the restored index, a new
  write through the restored triggers).
- ``test_latest_downgrade_keeps_memos``: the reversible-with-data requirement
  for the latest revision: ``head-1`` then ``head`` keeps the memo rows intact.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import pathlib
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from litestar.testing import AsyncTestClient
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from app.auth.passwords import hash_password, make_hasher
from app.auth.secrets import digest
from app.db import schema
from app.db.engine import create_engine
from app.db.migrate import alembic_config, current_revision, downgrade, head_revision, upgrade
from app.db.revision import HEAD, database_revision
from app.server import create_app
from app.settings import Settings
from tests.conftest import _admin_exec
from tests.support import MODEL_CACHE, free_port, make_settings, wait_ready

_counter = itertools.count()
SESSION_TOKEN = "migration-test-session-token"  # bearer secret of alice's inserted session
PASSWORD = "password-1"

Snapshot = dict[str, list[dict[str, Any]]]


def chain() -> list[str]:
    """Revision ids from the first to head; the chain must be linear."""
    scripts = ScriptDirectory.from_config(alembic_config())
    heads = scripts.get_heads()
    assert len(heads) == 1, f"the migration chain has several heads: {heads}"
    revisions = list(reversed(list(scripts.walk_revisions("base", "heads"))))
    assert revisions[0].down_revision is None
    for prev, rev in itertools.pairwise(revisions):
        assert rev.down_revision == prev.revision, f"{rev.revision} is not linear"
    return [r.revision for r in revisions]


@pytest.fixture
async def empty_url(
    dialect: str, tmp_path: pathlib.Path, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """A fresh database with no tables at all."""
    if dialect == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    root: str = request.getfixturevalue("pg_root")
    name = f"mig_{os.getpid()}_{next(_counter)}"
    await _admin_exec(root, f"CREATE DATABASE {name}")
    yield root.format(db=name)
    await _admin_exec(root, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
async def engine(empty_url: str) -> AsyncIterator[AsyncEngine]:
    eng = create_engine(empty_url)
    yield eng
    await eng.dispose()


# --------------------------------------------------------------------------- data


async def insert_realistic_rows(engine: AsyncEngine) -> dict[str, int]:
    """Rows in every table, with consistent foreign keys; answers a few ids."""
    now = int(time.time())
    hashed = await hash_password(make_hasher("cheap"), PASSWORD)
    s = schema
    async with engine.begin() as conn:

        async def insert(table: sa.Table, **values: Any) -> int:
            result = await conn.execute(table.insert().values(**values))
            pk = result.inserted_primary_key
            return int(pk[0]) if pk and isinstance(pk[0], int) else 0

        alice = await insert(
            s.user_account,
            username="alice",
            role="ADMIN",
            state="NORMAL",
            nickname="Alice",
            email="alice@example.com",
            description="admin",
            password_hash=hashed,
            created_ts=now - 100,
            updated_ts=now - 50,
        )
        bob = await insert(
            s.user_account,
            username="bob",
            role="USER",
            state="NORMAL",
            password_hash=hashed,
            created_ts=now - 90,
            updated_ts=now - 90,
        )
        await insert(
            s.auth_session,
            user_id=alice,
            token_hash=digest(SESSION_TOKEN),
            csrf_token="c" * 32,
            created_ts=now,
            expires_ts=now + 86400,
            last_seen_ts=now,
        )
        await insert(
            s.access_token,
            user_id=bob,
            description="agent key",
            token_hash=digest("dbk_pat_migrationtest"),
            token_hint="test",
            restriction={"scope": "READ", "personal": "OWN", "spaces": []},
            created_ts=now,
            expires_ts=now + 3600,
            last_used_ts=None,
        )
        origin = {"kind": "session"}
        public = await insert(
            s.memo,
            uid="public-memo",
            creator_id=alice,
            content="# Books\n\n#book/fiction read",
            visibility="PUBLIC",
            state="NORMAL",
            pinned=True,
            created_ts=now - 30,
            updated_ts=now - 20,
            title="Books",
            snippet="Books read",
            origin=origin,
            location_placeholder="Paris",
            location_latitude=48.8566,
            location_longitude=2.3522,
        )
        private = await insert(
            s.memo,
            uid="private-memo",
            creator_id=alice,
            content="- [ ] feed the zebra `now` https://example.com",
            visibility="PRIVATE",
            state="NORMAL",
            created_ts=now - 10,
            updated_ts=now - 10,
            snippet="feed the zebra",
            has_link=True,
            has_task_list=True,
            has_code=True,
            has_incomplete_tasks=True,
            origin={"kind": "pat", "id": 1, "description": "agent key"},
            version=3,
        )
        comment = await insert(
            s.memo,
            uid="comment-memo",
            creator_id=bob,
            content="nice list",
            visibility="PUBLIC",
            state="ARCHIVED",
            created_ts=now - 5,
            updated_ts=now - 5,
            snippet="nice list",
            parent_id=public,
            origin=origin,
        )
        for position, tag in enumerate(("book", "book/fiction")):
            await insert(s.memo_tag, memo_id=public, tag=tag, position=position)
        await insert(
            s.memo_html, memo_id=public, renderer=1, content_hash="0" * 64, html="<p>hi</p>\n"
        )
        await insert(s.memo_relation, memo_id=private, related_memo_id=public, type="REFERENCE")
        await insert(s.memo_relation, memo_id=comment, related_memo_id=public, type="COMMENT")
        await insert(s.reaction, memo_id=public, creator_id=bob, reaction_type="👍", created_ts=now)
        await insert(
            s.attachment,
            uid="att-blob",
            creator_id=alice,
            memo_id=public,
            filename="cover.png",
            mime_type="image/png",
            size=8,
            blob=b"\x89PNG\r\n\x1a\n",
            created_ts=now,
            **(
                {"storage_type": "DATABASE"}
                if await has_column(conn, "attachment", "storage_type")
                else {}
            ),
            **(
                {"sha256": "5f0a" * 16}  # 0018: the upload's hash, for idempotent repeats
                if await has_column(conn, "attachment", "sha256")
                else {}
            ),
        )
        await insert(
            s.attachment,
            uid="att-disk",
            creator_id=alice,
            memo_id=None,
            filename="notes.txt",
            mime_type="text/plain",
            size=5,
            storage_key="0123456789abcdef0123456789abcdef",
            created_ts=now,
        )
        await insert(
            s.memo_share,
            memo_id=private,
            token="share-token-0123456789",
            creator_id=alice,
            created_ts=now,
            expires_ts=now + 7 * 86400,
        )
        await insert(
            s.saved_view,
            user_id=alice,
            title="Books",
            filter='"book" in tags && visibility == "PUBLIC"',
            created_ts=now,
            updated_ts=now,
        )
        await insert(
            s.instance_setting,
            name="ACCESS",
            value={
                "access_mode": "PRIVATE",
                "disallow_public_visibility": False,
                "allow_registration": False,
                "content_length_limit": 8192,
            },
        )
        for memo_id, kind, version in (
            (public, "CREATE", 1),
            (private, "CREATE", 1),
            (private, "UPDATE", 2),
            (private, "UPDATE", 3),
            (comment, "ARCHIVE", 2),
        ):
            await insert(
                s.memo_event,
                memo_id=memo_id,
                kind=kind,
                actor_id=alice,
                credential={"kind": "session"},
                prior_content=None if kind == "CREATE" else "older text",
                prior=None if kind == "CREATE" else {"visibility": "PRIVATE"},
                version=version,
                created_ts=now,
            )
        await insert(s.throttle, key="a" * 64, attempts=3, last_ts=now, blocked_until=now + 4)
        await insert(
            s.password_reset,
            user_id=bob,
            token_hash="b" * 64,
            issued_by="users/alice",
            created_ts=now,
            expires_ts=now + 3600,
        )
        await insert(
            s.audit_event,
            created_ts=now,
            action="PASSWORD_RESET_ISSUED",
            actor="users/alice",
            target_user_id=bob,
            detail={"expires_ts": now + 3600},
        )
        # A space of bob's (alice is not a member, so her listings are unchanged),
        # with a memo filed in its tree.
        space = await insert(
            s.space,
            uid="team-space",
            title="Team",
            description="shared",
            creator_id=bob,
            default_member_grants=[{"path": "share", "level": "WRITE"}],
            created_ts=now,
            updated_ts=now,
        )
        await insert(
            s.space_member,
            space_id=space,
            user_id=bob,
            role="ADMIN",
            state="ACTIVE",
            invited_by=None,
            created_ts=now,
            updated_ts=now,
        )
        await insert(
            s.space_event,
            space_id=space,
            actor_id=bob,
            kind="SPACE_CREATED",
            detail={"title": "Team"},
            created_ts=now,
        )
        # Groups and grants (migration 0005): bob's own grants and a group's.
        group = await insert(s.space_group, space_id=space, title="Editors", created_ts=now)
        await insert(s.space_group_member, group_id=group, user_id=bob)
        for user_id, group_id, path, level in (
            (bob, None, f"home.{bob}", 3),
            (bob, None, "share", 3),
            (None, group, "share.projects", 2),
        ):
            await insert(
                s.space_grant,
                space_id=space,
                user_id=user_id,
                group_id=group_id,
                path=path,
                level=level,
                created_by=bob,
                created_ts=now,
            )
        await insert(
            s.memo,
            uid="space-memo",
            creator_id=bob,
            content="team plan #plan",
            visibility="SPACE",
            state="NORMAL",
            created_ts=now,
            updated_ts=now,
            snippet="team plan",
            space_id=space,
            tree="share.projects",
            origin=origin,
        )
        # A memo in the trash (migration 0014), with its bookkeeping row.
        trashed = await insert(
            s.memo,
            uid="trashed-memo",
            creator_id=alice,
            content="thrown away",
            visibility="PRIVATE",
            state="TRASHED",
            created_ts=now - 3,
            updated_ts=now - 2,
            snippet="thrown away",
            origin=origin,
            version=2,
        )
        if "memo_trash" in await live(engine, conn):
            await conn.execute(
                s.memo_trash.insert().values(
                    memo_id=trashed,
                    root_id=trashed,
                    prior_state="NORMAL",
                    trashed_ts=now - 1,
                    trashed_by=alice,
                )
            )
        # Webhooks (0015): an endpoint of alice's, one delivered event and its log line.
        if "webhook" in await live(engine, conn):
            hook = await insert(
                s.webhook,
                uid="0123456789abcdef",
                owner_id=alice,
                url="https://hooks.example.com/daybook",
                display_name="ci",
                secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                created_ts=now,
                updated_ts=now,
            )
            event = await insert(
                s.webhook_event,
                msg_id="msg_0123456789abcdef0123456789abcdef",
                webhook_id=hook,
                activity="memos.memo.created",
                memo_id=public,
                snapshot={"memo": {"name": "memos/public-memo"}, "creator": "users/alice"},
                state="DELIVERED",
                attempts=1,
                next_attempt_ms=now * 1000,
                claimed_until_ms=0,
                created_ms=now * 1000,
                finished_ms=now * 1000 + 40,
            )
            await insert(
                s.webhook_delivery,
                event_id=event,
                webhook_id=hook,
                attempt=1,
                outcome="DELIVERED",
                status_code=200,
                started_ms=now * 1000,
                duration_ms=40,
            )
        # Rate limit counters (0017): one key's window.
        if "rate_limit" in await live(engine, conn):
            await conn.execute(
                s.rate_limit.insert().values(key="0" * 64, window_start=now - now % 60, hits=3)
            )
        # Job leases (0016): the embedding worker's, held by some process.
        if "job_lease" in await live(engine, conn):
            await conn.execute(
                s.job_lease.insert().values(
                    name="embedding", holder="host:123:abcd", expires_ms=now * 1000 + 15_000
                )
            )
        # Tables the migrations create outside the metadata that hold data.
        if "memo_embedding" in await live(engine, conn):
            await conn.execute(
                sa.text(
                    "INSERT INTO memo_embedding (memo_id, model, dim, vector, content_hash,"
                    " updated_ts) VALUES (:memo, 'test-model', 4, :vector, :hash, :now)"
                ),
                {"memo": public, "vector": bytes(8), "hash": 1234567890123, "now": now},
            )
    return {"alice": alice, "bob": bob, "public": public, "private": private}


async def has_column(conn: Any, table: str, column: str) -> bool:
    return column in (await live(conn.engine, conn)).get(table, set())


async def snapshot(engine: AsyncEngine) -> Snapshot:
    """All rows of every data table in the database, on its live columns.

    Metadata tables are read through their typed Core columns; data tables the
    migrations create outside the metadata (``memo_embedding``) are reflected,
    without the columns SQLAlchemy has no type for (pgvector's ``halfvec``).
    """

    def run(conn: Connection) -> Snapshot:
        out: Snapshot = {}
        for name, cols in live_columns(conn).items():
            if name in schema.metadata.tables:
                table = schema.metadata.tables[name]
                columns = [c for c in table.columns if c.name in cols]
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", sa.exc.SAWarning)
                    table = sa.Table(name, sa.MetaData(), autoload_with=conn)
                columns = [c for c in table.columns if not isinstance(c.type, sa.types.NullType)]
            query = sa.select(*columns).order_by(*(table.primary_key.columns or columns))
            out[name] = [dict(r) for r in conn.execute(query).mappings().all()]
        return out

    async with engine.connect() as conn:
        return await conn.run_sync(run)


def live_columns(conn: Connection) -> dict[str, set[str]]:
    """Columns of every data table: not Alembic's, not FTS5 virtual tables or their shadows."""
    inspector = sa.inspect(conn)
    names = set(inspector.get_table_names()) - {"alembic_version"}
    if conn.dialect.name == "sqlite":
        virtual = {
            r[0]
            for r in conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND sql LIKE 'CREATE VIRTUAL TABLE%'"
            )
        }
        names = {n for n in names - virtual if not any(n.startswith(f"{v}_") for v in virtual)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.exc.SAWarning)  # halfvec: no SQLAlchemy type
        return {name: {c["name"] for c in inspector.get_columns(name)} for name in names}


async def live(engine: AsyncEngine, conn: Any = None) -> dict[str, set[str]]:
    if conn is not None:
        return dict(await conn.run_sync(live_columns))
    async with engine.connect() as c:
        return await c.run_sync(live_columns)


def project(snap: Snapshot, columns: dict[str, set[str]]) -> Snapshot:
    return {
        table: [{k: v for k, v in row.items() if k in columns[table]} for row in rows]
        for table, rows in snap.items()
        if table in columns
    }


async def outside_objects(engine: AsyncEngine) -> set[tuple[str, str]]:
    """Schema objects the metadata does not describe (FTS tables, triggers, expression indexes)."""
    known_tables = set(schema.metadata.tables) | {"alembic_version"}
    known_indexes = {ix.name for t in schema.metadata.tables.values() for ix in t.indexes}
    async with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            rows = (
                await conn.exec_driver_sql(
                    "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
                )
            ).all()
            return {
                (t, n)
                for t, n, tbl in rows
                if (t == "table" and n not in known_tables)
                or t == "trigger"
                or (
                    t == "index" and n not in known_indexes and not n.startswith("sqlite_autoindex")
                )
            }
        rows = (
            await conn.exec_driver_sql(
                "SELECT 'index', indexname FROM pg_indexes WHERE schemaname = 'public'"
                " UNION ALL SELECT 'table', tablename FROM pg_tables WHERE schemaname = 'public'"
                " UNION ALL SELECT 'trigger', tgname FROM pg_trigger WHERE NOT tgisinternal"
            )
        ).all()
        constraint_indexes = {
            c.name
            for t in schema.metadata.tables.values()
            for c in t.constraints
            if isinstance(c, sa.PrimaryKeyConstraint | sa.UniqueConstraint)
        }
        return {
            (t, n)
            for t, n in rows
            if (t == "table" and n not in known_tables)
            or t == "trigger"
            or (
                t == "index"
                and n not in known_indexes
                and n not in constraint_indexes
                and n != "alembic_version_pkc"
            )
        }


async def schema_diff(engine: AsyncEngine) -> list[Any]:
    """``compare_metadata`` against the live database, ignoring non-metadata objects."""

    def include_name(name: str | None, type_: str, parent: Any) -> bool:
        if type_ == "table":
            return name in schema.metadata.tables
        return True

    def include_object(
        obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
    ) -> bool:
        # An index the migrations create outside the metadata (e.g. the
        # PostgreSQL trigram GIN index on lower(content)).
        return not (type_ == "index" and reflected and compare_to is None)

    def run(conn: Connection) -> list[Any]:
        context = MigrationContext.configure(
            conn,
            opts={
                "compare_type": True,
                "include_name": include_name,
                "include_object": include_object,
            },
        )
        return list(compare_metadata(context, schema.metadata))

    async with engine.connect() as conn:
        return await conn.run_sync(run)


# Tables whose ids nothing else ever names (no column, no JSON detail): a
# round trip may restart them. Every other table with an integer ``id`` must
# never hand out an id again once a downgrade dropped it.
IDS_NAMED_BY_NOTHING = {
    "space_event",
    "password_reset",
    "audit_event",
    "webhook",
    "webhook_event",
    "webhook_delivery",
}


async def high_water(engine: AsyncEngine) -> dict[str, int]:
    """Per metadata table with an integer ``id``: the highest id it has handed out."""

    def run(conn: Connection) -> dict[str, int]:
        out: dict[str, int] = {}
        present = set(sa.inspect(conn).get_table_names())
        for name, table in schema.metadata.tables.items():
            if name not in present or "id" not in table.c or len(table.primary_key) != 1:
                continue
            top = conn.execute(sa.select(sa.func.coalesce(sa.func.max(table.c.id), 0))).scalar()
            if conn.dialect.name == "sqlite":
                seq = conn.execute(
                    sa.text("SELECT seq FROM sqlite_sequence WHERE name = :t"), {"t": name}
                ).scalar()
            else:
                seq = conn.execute(
                    sa.text(
                        "SELECT pg_sequence_last_value(pg_get_serial_sequence(:t, 'id')::regclass)"
                    ),
                    {"t": name},
                ).scalar()
            out[name] = max(int(top or 0), int(seq or 0))
        return out

    async with engine.connect() as conn:
        return await conn.run_sync(run)


# --------------------------------------------------------------------------- tests


async def test_walk_down_and_up_with_data(engine: AsyncEngine) -> None:
    revisions = chain()
    assert await current_revision(engine) is None
    await upgrade(engine, "head")
    assert await current_revision(engine) == revisions[-1]

    await insert_realistic_rows(engine)
    at_head = await snapshot(engine)
    empty = sorted(name for name, rows in at_head.items() if not rows)
    assert not empty, f"tables without test rows (add them to insert_realistic_rows): {empty}"
    assert set(schema.metadata.tables) <= set(at_head)

    # Down, one revision at a time: whatever has existed throughout keeps its rows.
    surviving = await live(engine)
    for rev, target in zip(reversed(revisions), [*reversed(revisions[:-1]), None], strict=True):
        await downgrade(engine, target or "base", confirm=True)
        assert await current_revision(engine) == target, f"downgrade of {rev}"
        now = await live(engine)
        surviving = {t: cols & now[t] for t, cols in surviving.items() if t in now}
        assert project(await snapshot(engine), surviving) == project(at_head, surviving), (
            f"data lost by the downgrade of {rev}"
        )

    # At base, nothing is left but Alembic's own bookkeeping.
    assert await live(engine) == {}
    assert await outside_objects(engine) == set()

    # Up, one revision at a time, to head.
    for rev in revisions:
        await upgrade(engine, rev)
        assert await current_revision(engine) == rev
        present = await live(engine)
        assert project(await snapshot(engine), surviving) == project(at_head, surviving)
        assert set(present) - {"alembic_version"}, f"{rev} left no tables"

    assert set(schema.metadata.tables) <= set(await live(engine))
    diff = await schema_diff(engine)
    assert diff == [], f"migrations at head differ from app.db.schema.metadata: {diff}"


async def test_each_revision_reversible_with_data(
    engine: AsyncEngine, empty_url: str, tmp_path: pathlib.Path
) -> None:
    revisions = chain()
    await upgrade(engine, "head")
    await insert_realistic_rows(engine)
    at_head = await snapshot(engine)
    objects = await outside_objects(engine)

    # Every revision but the first (whose downgrade drops the schema), latest
    # first: down to just below it, then back to head. Tables dropped on the
    # way come back empty, so only those never dropped so far are compared.
    surviving = await live(engine)
    ids_at_head = await high_water(engine)
    for parent, revision in reversed(list(itertools.pairwise(revisions))):
        await downgrade(engine, parent, confirm=True)
        assert await current_revision(engine) == parent
        now = await live(engine)
        surviving = {t: cols & now[t] for t, cols in surviving.items() if t in now}
        assert project(await snapshot(engine), surviving) == project(at_head, surviving), (
            f"the downgrade of {revision} (and later) lost data"
        )
        await upgrade(engine, "head")
        assert await current_revision(engine) == revisions[-1]
        assert project(await snapshot(engine), surviving) == project(at_head, surviving)
        assert await outside_objects(engine) == objects, f"after re-applying {revision}"
        assert await schema_diff(engine) == []
        ids = await high_water(engine)
        reused = {
            t: (ids[t], top)
            for t, top in ids_at_head.items()
            if t not in IDS_NAMED_BY_NOTHING and ids[t] < top
        }
        assert reused == {}, f"after re-applying {revision}, ids would be handed out again"
    await serves_memos(engine, empty_url, tmp_path)


async def test_latest_downgrade_keeps_memos(
    engine: AsyncEngine, empty_url: str, tmp_path: pathlib.Path
) -> None:
    revisions = chain()
    if len(revisions) < 2:
        pytest.skip("only one revision: its downgrade drops the schema")
    await upgrade(engine, "head")
    await insert_realistic_rows(engine)
    memos_before = (await snapshot(engine))["memo"]
    tags_before = (await snapshot(engine))["memo_tag"]
    assert len(memos_before) == 5

    await downgrade(engine, "-1", confirm=True)
    assert await current_revision(engine) == revisions[-2]
    assert (await snapshot(engine))["memo"] == memos_before
    await upgrade(engine, "head")
    assert await current_revision(engine) == revisions[-1]
    assert (await snapshot(engine))["memo"] == memos_before
    assert (await snapshot(engine))["memo_tag"] == tags_before
    await serves_memos(engine, empty_url, tmp_path)


async def test_readiness_reads_the_revision_alembic_wrote(
    engine: AsyncEngine, empty_url: str, tmp_path: pathlib.Path
) -> None:
    """``/readyz`` compares the database's revision with :data:`HEAD` without
    Alembic (decision 0054): the two must agree with Alembic at every step."""
    assert HEAD == head_revision() == chain()[-1]
    async with engine.connect() as conn:
        assert await database_revision(conn) is None  # no version table yet
    await upgrade(engine, chain()[-2])
    async with engine.connect() as conn:
        assert await database_revision(conn) == chain()[-2] == await current_revision(engine)
    await engine.dispose()
    settings = make_settings(empty_url, tmp_path, migrate_on_start=False)
    async with AsyncTestClient(app=create_app(settings)) as client:
        r = await client.get("/readyz")
        assert r.status_code == 503
        assert r.json() == {"status": f"migrations pending (at {chain()[-2]})"}
    await upgrade(engine, "head")
    async with engine.connect() as conn:
        assert await database_revision(conn) == HEAD
    await engine.dispose()
    async with AsyncTestClient(app=create_app(settings)) as client:
        assert (await client.get("/readyz")).status_code == 200


async def serves_memos(engine: AsyncEngine, url: str, tmp_path: pathlib.Path) -> None:
    """The application works on the round-tripped database."""
    await engine.dispose()  # the app opens its own connections
    settings = make_settings(url, tmp_path, migrate_on_start=False)
    auth = {"Authorization": f"Bearer {SESSION_TOKEN}"}
    async with AsyncTestClient(app=create_app(settings)) as client:
        r = await client.get("/readyz")
        assert r.status_code == 200, r.text
        r = await client.get("/api/v1/memos", headers=auth)
        assert r.status_code == 200, r.text
        assert {m["name"] for m in r.json()["memos"]} == {"memos/public-memo", "memos/private-memo"}
        # The trashed memo is in its creator's trash only (adopted again after a round trip).
        r = await client.get("/api/v1/users/alice/trash", headers=auth)
        assert r.status_code == 200, r.text
        assert [m["name"] for m in r.json()["memos"]] == ["memos/trashed-memo"]
        # The restored content index finds the old row ...
        r = await client.get(
            "/api/v1/memos", params={"filter": 'content.contains("zebra")'}, headers=auth
        )
        assert r.status_code == 200, r.text
        assert [m["name"] for m in r.json()["memos"]] == ["memos/private-memo"]
        # ... and the restored write path (triggers on SQLite) indexes a new one.
        r = await client.post("/api/v1/memos", json={"content": "a giraffe too"}, headers=auth)
        assert r.status_code in (200, 201), r.text
        r = await client.get(
            "/api/v1/memos", params={"filter": 'content.contains("giraffe")'}, headers=auth
        )
        assert r.status_code == 200, r.text
        assert len(r.json()["memos"]) == 1
        r = await client.post(
            "/api/v1/auth/signin",
            json={"passwordCredentials": {"username": "bob", "password": PASSWORD}},
        )
        assert r.status_code == 200, r.text


# --------------------------------------------------------------------------- frozen history


def _revision_files() -> list[pathlib.Path]:
    scripts = ScriptDirectory.from_config(alembic_config())
    files = [pathlib.Path(str(scripts.get_revision(rev).path)) for rev in chain()]
    assert files and all(f.is_file() for f in files)
    return files


def _imported_modules(path: pathlib.Path) -> set[str]:
    import ast

    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            modules.add(str(node.args[0].value))
    return modules


@pytest.mark.parametrize("path", _revision_files(), ids=lambda p: p.name)
def test_revision_imports_nothing_from_the_application(path: pathlib.Path) -> None:
    """A revision is history: importing a live module (``app.*``) lets an edit to that
    module rewrite what an old revision does. Revisions use Alembic, SQLAlchemy and the
    standard library only, and carry their own statements."""
    live = sorted(m for m in _imported_modules(path) if m == "app" or m.startswith("app."))
    assert live == [], f"{path.name} imports live application modules: {live}"


# --------------------------------------------------------------------------- processes
#
# Real ``daybook`` processes. Their blocking waits run in a worker thread
# (``asyncio.to_thread``) so the test's event loop stays free.


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAYBOOK_")}
    return {
        **env,
        "DAYBOOK_EMBED_WORKER": "0",
        "DAYBOOK_MODEL_CACHE": str(MODEL_CACHE),  # built once per machine (tests.support)
        "DAYBOOK_LOG_FORMAT": "json",
        "DAYBOOK_WORKERS": "1",
    }


def _daybook(url: str, data: pathlib.Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "app.cli", *args, "--data", str(data), "--database-url", url]


def _start_together(url: str, tmp_path: pathlib.Path, migrators: int, servers: int) -> list[str]:
    """Start the processes at once; answers one problem per process that failed."""
    ports = [free_port() for _ in range(servers)]
    procs = [
        subprocess.Popen(
            _daybook(url, tmp_path / f"m{n}", "migrate"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        for n in range(migrators)
    ]
    serving = [
        subprocess.Popen(
            _daybook(url, tmp_path / f"s{n}", "serve", "--port", str(port)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        for n, port in enumerate(ports)
    ]
    problems: list[str] = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            if proc.returncode != 0 or f"database at revision {chain()[-1]}" not in out.decode():
                problems.append(f"migrate exited {proc.returncode}: {err.decode()[-2000:]}")
        for port, server in zip(ports, serving, strict=True):
            if not wait_ready(f"http://127.0.0.1:{port}", 60, proc=server):
                problems.append(f"serve on {port} never became ready (exit {server.poll()})")
    finally:
        for server in serving:
            server.terminate()
        for server in serving:
            code = server.wait(timeout=30)
            if code != 0:
                err = server.stderr.read().decode()[-2000:] if server.stderr else ""
                problems.append(f"serve exited {code}: {err}")
    return problems


async def test_processes_starting_together_all_succeed(
    empty_url: str, engine: AsyncEngine, tmp_path: pathlib.Path
) -> None:
    """Four ``daybook migrate`` and two ``daybook serve`` processes started at once on a
    fresh database: every one succeeds (the servers become ready, then stop cleanly) and
    the schema is at head."""
    problems = await asyncio.to_thread(_start_together, empty_url, tmp_path, 4, 2)
    assert problems == []
    assert await current_revision(engine) == chain()[-1]
    assert await schema_diff(engine) == []


_KILLED_CHILD = """
import asyncio, signal, sys
from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.logs import configure_logging

configure_logging("json")  # logs to stderr: stdout carries the marker line only

def on_step(revision):
    if revision == sys.argv[2]:
        print(revision, flush=True)
        signal.pause()  # the parent SIGKILLs us here, mid-transaction

async def main():
    engine = create_engine(sys.argv[1])
    await upgrade(engine, "head", on_step=on_step)

asyncio.run(main())
"""


def _kill_after_step(url: str, stop: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, url, stop],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().decode().strip()  # returns once the step is applied
        assert line == stop, f"the child ended before step {stop} (exit {child.poll()})"
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def _kills() -> list[tuple[str, str]]:
    """(start, stop): from 0001 through the FTS5 trigram table, and from 0003 past each step."""
    return [("0001", "0002"), *(("0003", stop) for stop in chain()[chain().index("0004") :])]


def _postgresql_kills() -> set[str]:
    """The stops PostgreSQL is killed at: the first, the middle and the last.

    Its DDL is transactional, so a kill anywhere rolls the whole upgrade back
    the same way; SQLite (whose non-transactional DDL was the bug, issue 12)
    is killed after every step. About 70 s of CI less.
    """
    stops = [stop for _, stop in _kills()]
    return {stops[0], stops[len(stops) // 2], stops[-1]}


@pytest.fixture
def _killed_here(dialect: str, request: pytest.FixtureRequest) -> None:
    stop = request.node.callspec.params["stop"]
    if dialect == "postgresql" and stop not in _postgresql_kills():
        pytest.skip("PostgreSQL's transactional DDL: killed at the first, middle and last step")


@pytest.mark.parametrize(("start", "stop"), _kills())
async def test_upgrade_killed_midway_reruns_to_head(
    start: str,
    stop: str,
    _killed_here: None,
    engine: AsyncEngine,
    empty_url: str,
    tmp_path: pathlib.Path,
) -> None:
    """An upgrade from ``start`` SIGKILLed right after step ``stop`` leaves the database at
    ``start`` with its data and nothing of the later revisions; ``daybook migrate`` then
    reaches head."""
    await upgrade(engine, "head")
    await insert_realistic_rows(engine)
    await downgrade(engine, start, confirm=True)
    before = await snapshot(engine)
    columns_before = await live(engine)
    objects_before = await outside_objects(engine)
    await engine.dispose()

    await asyncio.to_thread(_kill_after_step, empty_url, stop)

    assert await current_revision(engine) == start
    assert await snapshot(engine) == before
    assert await outside_objects(engine) == objects_before
    if engine.dialect.name == "sqlite":
        async with engine.connect() as conn:
            assert (await conn.exec_driver_sql("PRAGMA integrity_check")).all() == [("ok",)]

    rerun = await asyncio.to_thread(
        subprocess.run,
        _daybook(empty_url, tmp_path / "data", "migrate"),
        capture_output=True,
        env=_env(),
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr.decode()
    assert await current_revision(engine) == chain()[-1]
    now = await live(engine)
    surviving = {t: c & now[t] for t, c in columns_before.items() if t in now}
    assert project(await snapshot(engine), surviving) == project(before, surviving)
    assert await schema_diff(engine) == []
    await serves_memos(engine, empty_url, tmp_path)


async def test_upgrade_failing_between_steps_changes_nothing(engine: AsyncEngine) -> None:
    """A step that raises (here: injected after 0005 applied) rolls back every step of the
    run, DDL included; the next run applies them all."""
    await upgrade(engine, "0003")
    objects = await outside_objects(engine)

    def fail(revision: str) -> None:
        if revision == "0005":
            raise RuntimeError("injected failure")

    with pytest.raises(RuntimeError, match="injected"):
        await upgrade(engine, "head", on_step=fail)
    assert await current_revision(engine) == "0003"
    assert await outside_objects(engine) == objects
    assert "space_grant" not in await live(engine)
    await upgrade(engine, "head")
    assert await current_revision(engine) == chain()[-1]
    assert await schema_diff(engine) == []


def _start_and_wait_for(args: list[str], needle: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert proc.stderr is not None
    for raw in proc.stderr:  # the log line is the event: the process reached the lock
        if needle in raw.decode():
            return proc
    raise AssertionError(f"the process ended (exit {proc.wait()}) without logging {needle!r}")


async def test_a_held_lock_makes_a_migration_wait(
    engine: AsyncEngine, empty_url: str, tmp_path: pathlib.Path
) -> None:
    """While another connection holds the migration lock, ``daybook migrate`` says it is
    waiting and changes nothing; once the lock is released it migrates."""
    from app.db.migrate import migration_engine, take_lock

    holder = migration_engine(empty_url)
    conn = await holder.connect()
    await conn.run_sync(take_lock)
    try:
        proc = await asyncio.to_thread(
            _start_and_wait_for,
            _daybook(empty_url, tmp_path / "d", "migrate"),
            "waiting for the migration lock",
        )
        assert proc.poll() is None
        assert await current_revision(engine) is None
    finally:
        await conn.rollback()
        await conn.close()
        await holder.dispose()
    _, err = await asyncio.to_thread(proc.communicate, timeout=120)
    assert proc.returncode == 0, err.decode()
    assert await current_revision(engine) == chain()[-1]


# --------------------------------------------------------------------------- ids across a round trip


async def test_space_round_trip_hands_no_old_memo_to_a_new_space(settings: Settings) -> None:
    """Rolling 0003 back and forward must not let a new space inherit memos placed in a
    dropped one: alice's three SPACE memos stay out of reach of bob's new space (before:
    3 of 3 readable by bob), and the rows themselves are intact."""
    from tests.conftest import sign_up
    from tests.spaces.conftest import create_space, own_root, space_memo

    async with AsyncTestClient(app=create_app(settings)) as client:
        alice = await sign_up(client, "alice")
        bob = await sign_up(client, "bob", admin=alice)
        old = await create_space(alice, "Alpha")
        await own_root(alice, old["name"])
        names = []
        for i in range(3):
            r = await space_memo(alice, old["name"], "share", content=f"alice secret {i}")
            assert r.status_code == 200, r.text
            names.append(r.json()["name"])
        assert (await bob.get("/api/v1/memos")).json()["memos"] == []

    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            old_id = (await conn.execute(sa.select(sa.func.max(schema.space.c.id)))).scalar()
        await downgrade(engine, "0002", confirm=True)
        await upgrade(engine, "head")
    finally:
        await engine.dispose()

    async with AsyncTestClient(app=create_app(settings)) as client:
        r = await client.post(
            "/api/v1/auth/signin",
            json={"passwordCredentials": {"username": "bob", "password": "password-1"}},
        )
        assert r.status_code == 200, r.text
        bob_auth = {"Authorization": f"Bearer {r.json()['accessToken']}"}
        r = await client.post("/api/v1/spaces", json={"title": "Bob's"}, headers=bob_auth)
        assert r.status_code == 200, r.text
        new = r.json()["name"]
        r = await client.post(
            f"/api/v1/{new}/grants",
            json={"principal": "users/bob", "path": "", "level": "OWNER"},
            headers=bob_auth,
        )
        assert r.status_code == 200, r.text
        listed = (await client.get("/api/v1/memos", headers=bob_auth)).json()["memos"]
        assert [m["content"] for m in listed] == []
        for name in names:
            assert (await client.get(f"/api/v1/{name}", headers=bob_auth)).status_code == 404

    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            new_id = (
                await conn.execute(
                    sa.select(schema.space.c.id).where(schema.space.c.uid == new.split("/")[1])
                )
            ).scalar_one()
            kept = (
                await conn.execute(
                    sa.select(schema.memo.c.content, schema.memo.c.space_id).where(
                        schema.memo.c.content.like("alice secret %")
                    )
                )
            ).all()
    finally:
        await engine.dispose()
    assert new_id > old_id
    assert sorted(kept) == [(f"alice secret {i}", old_id) for i in range(3)]


async def test_downgrade_below_0010_refuses_while_attachments_are_in_s3(
    engine: AsyncEngine,
) -> None:
    """Revision 0009 would take an S3 key for a local file: the downgrade refuses, changes
    nothing, and goes ahead once no attachment is in S3."""
    await upgrade(engine, "head")
    async with engine.begin() as conn:
        await conn.execute(
            schema.attachment.insert().values(
                uid="in-s3",
                creator_id=1,
                filename="a.bin",
                mime_type="application/octet-stream",
                size=3,
                storage_type="S3",
                storage_key="0123456789abcdef0123456789abcdef",
                created_ts=0,
            )
        )
    with pytest.raises(RuntimeError, match="1 attachments are stored in S3"):
        await downgrade(engine, "0009", confirm=True)
    assert await current_revision(engine) == chain()[-1]
    async with engine.begin() as conn:
        await conn.execute(schema.attachment.delete())
    await downgrade(engine, "0009", confirm=True)
    assert await current_revision(engine) == "0009"
